package dev.odradek.kafka

import dev.odradek.kafka.ffi.TopicPartition as FfiTopicPartition

/** A topic and partition. */
data class TopicPartition(val topic: String, val partition: Int) {
    override fun toString(): String = "$topic-$partition"

    internal fun toFfi() = FfiTopicPartition(topic, partition)
}

internal fun FfiTopicPartition.toApi() = TopicPartition(topic, partition)

/** An offset to commit (the next record to consume) with optional metadata. */
data class OffsetAndMetadata(val offset: Long, val metadata: String? = null)

/** A record header; keys may repeat. */
data class Header(val key: String, val value: ByteArray?) {
    override fun equals(other: Any?): Boolean =
        other is Header && key == other.key && value.contentEquals(other.value)

    override fun hashCode(): Int = 31 * key.hashCode() + (value?.contentHashCode() ?: 0)
}

/** A consumer's group identity, for [KafkaProducer.sendOffsetsToTransaction]. */
data class ConsumerGroupMetadata(
    val groupId: String,
    val memberId: String = "",
    val generationId: Int = -1,
    val groupInstanceId: String? = null,
)
