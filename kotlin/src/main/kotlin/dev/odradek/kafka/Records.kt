package dev.odradek.kafka

/**
 * A record to send (the Java client's `ProducerRecord`): [partition] `null` lets the
 * partitioner choose (murmur2 of the serialized key, as the Java client does), [timestamp]
 * `null` uses the current time.
 */
data class ProducerRecord<K, V>(
    val topic: String,
    val partition: Int? = null,
    val timestamp: Long? = null,
    val key: K? = null,
    val value: V?,
    val headers: List<Header> = emptyList(),
) {
    /** A record with a value only. */
    constructor(topic: String, value: V?) : this(topic, null, null, null, value)

    /** A record with a key and a value. */
    constructor(topic: String, key: K?, value: V?) : this(topic, null, null, key, value)
}

/** Where a record was written. */
data class RecordMetadata(
    val topic: String,
    val partition: Int,
    val offset: Long,
    val timestamp: Long,
    val serializedKeySize: Int,
    val serializedValueSize: Int,
) {
    /** Topic and partition. */
    fun topicPartition() = TopicPartition(topic, partition)
}

/** Whether a consumed record's timestamp was set by the producer or the broker. */
enum class TimestampType { CREATE_TIME, LOG_APPEND_TIME }

/** A consumed record (the Java client's `ConsumerRecord`). */
data class ConsumerRecord<K, V>(
    val topic: String,
    val partition: Int,
    val offset: Long,
    val timestamp: Long,
    val timestampType: TimestampType,
    val key: K?,
    val value: V?,
    val headers: List<Header>,
    val leaderEpoch: Int?,
) {
    /** Topic and partition. */
    fun topicPartition() = TopicPartition(topic, partition)
}

/** What one [KafkaConsumer.poll] returned, in order, grouped by partition on demand. */
class ConsumerRecords<K, V>(private val records: List<ConsumerRecord<K, V>>) :
    Iterable<ConsumerRecord<K, V>> {
    override fun iterator(): Iterator<ConsumerRecord<K, V>> = records.iterator()

    /** Number of records. */
    fun count(): Int = records.size

    /** Whether there are none. */
    fun isEmpty(): Boolean = records.isEmpty()

    /** The partitions that have records here. */
    fun partitions(): Set<TopicPartition> = records.mapTo(LinkedHashSet()) { it.topicPartition() }

    /** The records of one partition. */
    fun records(partition: TopicPartition): List<ConsumerRecord<K, V>> =
        records.filter { it.partition == partition.partition && it.topic == partition.topic }

    /** All records as a list. */
    fun toList(): List<ConsumerRecord<K, V>> = records
}
