package dev.odradek.kafka

import dev.odradek.kafka.ffi.IncomingRecord
import dev.odradek.kafka.ffi.NativeConsumer
import dev.odradek.kafka.ffi.OffsetCommit
import java.time.Duration
import java.util.Properties
import java.util.regex.Pattern
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking

/** The outcome of [KafkaConsumer.commitAsync] (the Java client's `OffsetCommitCallback`). */
fun interface OffsetCommitCallback {
    /** [exception] is `null` when [offsets] (empty: the positions polled) were committed. */
    fun onComplete(offsets: Map<TopicPartition, OffsetAndMetadata>, exception: Exception?)
}

/**
 * A Kafka consumer shaped like the Java client's `KafkaConsumer`, over Odradek's native core.
 *
 * [config] takes Kafka property names (`bootstrap.servers`, `group.id`, `auto.offset.reset`,
 * `enable.auto.commit`, `isolation.level`, `max.poll.records`, ...); unknown keys throw
 * [KafkaException] naming the key. Like Java's, it is meant for one thread at a time; the
 * rebalance listener runs inside [poll] on that thread. [pollAwait] and [asFlow] serve
 * coroutines.
 * [errorListener] hears client-level errors (brokers down: [ClientErrorListener]) inside
 * [poll].
 */
class KafkaConsumer<K, V> @JvmOverloads constructor(
    config: Map<String, Any?>,
    private val keyDeserializer: Deserializer<K>,
    private val valueDeserializer: Deserializer<V>,
    errorListener: ClientErrorListener? = null,
) : AutoCloseable {
    /** From `Properties`. */
    @JvmOverloads
    constructor(
        config: Properties,
        keyDeserializer: Deserializer<K>,
        valueDeserializer: Deserializer<V>,
        errorListener: ClientErrorListener? = null,
    ) : this(config.entries.associate { (k, v) -> k.toString() to v }, keyDeserializer, valueDeserializer, errorListener)

    internal val native: NativeConsumer =
        mapped { NativeConsumer(stringify(config), errorListener?.let(::ClientErrorAdapter)) }
    @Volatile private var listener: RebalanceAdapter? = null
    @Volatile private var subscription: Set<String> = emptySet()
    private val background = CoroutineScope(SupervisorJob() + Dispatchers.IO)

    /** Subscribes to [topics], replacing any subscription or assignment; needs `group.id`. */
    fun subscribe(topics: Collection<String>, listener: ConsumerRebalanceListener? = null) {
        val adapter = listener?.let { RebalanceAdapter(it) }
        mapped { native.subscribe(topics.toList(), adapter) }
        this.listener = adapter
        subscription = topics.toSet()
    }

    /** Subscribes to every topic matching [pattern]. */
    fun subscribe(pattern: Pattern, listener: ConsumerRebalanceListener? = null) {
        val p = pattern.pattern()
        subscribe(listOf(if (p.startsWith("^")) p else "^$p"), listener)
    }

    /** The topics subscribed to. */
    fun subscription(): Set<String> = subscription

    /** Assigns [partitions] by hand (no group membership). */
    fun assign(partitions: Collection<TopicPartition>) {
        mapped { native.assign(partitions.map { it.toFfi() }) }
        subscription = emptySet()
    }

    /** The partitions assigned now. */
    fun assignment(): Set<TopicPartition> = native.assignment().mapTo(LinkedHashSet()) { it.toApi() }

    /** Leaves the group (the revoke callback runs on this thread). */
    fun unsubscribe() {
        runBlocking { mapped { native.unsubscribe() } }
        subscription = emptySet()
        listener = null
    }

    /** Up to `max.poll.records` records, waiting up to [timeout] for the first. */
    fun poll(timeout: Duration): ConsumerRecords<K, V> = runBlocking { pollAwait(timeout) }

    /** [poll] for coroutines: suspends instead of blocking. */
    suspend fun pollAwait(timeout: Duration): ConsumerRecords<K, V> {
        val got = mapped { native.poll(timeout.toMillis().coerceAtLeast(0).toULong()) }
        listener?.rethrow()
        return ConsumerRecords(got.map { it.toRecord() })
    }

    private fun IncomingRecord.toRecord(): ConsumerRecord<K, V> = ConsumerRecord(
        topic,
        partition,
        offset,
        timestamp,
        if (logAppendTime) TimestampType.LOG_APPEND_TIME else TimestampType.CREATE_TIME,
        keyDeserializer.deserialize(topic, key),
        valueDeserializer.deserialize(topic, value),
        headers.map { Header(it.key, it.value) },
        leaderEpoch,
    )

    /** Commits the current positions (after the records [poll] returned, or where [seek] moved). */
    fun commitSync() = runBlocking { commitAwait() }

    /** Commits exactly [offsets]. */
    fun commitSync(offsets: Map<TopicPartition, OffsetAndMetadata>) = runBlocking { commitAwait(offsets) }

    /** [commitSync] for coroutines; `null` commits the current positions. */
    suspend fun commitAwait(offsets: Map<TopicPartition, OffsetAndMetadata>? = null) {
        val list = offsets?.map { (tp, o) -> OffsetCommit(tp.toFfi(), o.offset, o.metadata) }
        mapped { native.commit(list) }
    }

    /**
     * Commits in the background; [callback] runs on a background thread (not inside a later
     * [poll] as in Java) when the commit is done.
     */
    fun commitAsync(
        offsets: Map<TopicPartition, OffsetAndMetadata>? = null,
        callback: OffsetCommitCallback? = null,
    ) {
        background.launch {
            val error = try {
                commitAwait(offsets)
                null
            } catch (e: Exception) {
                e
            }
            callback?.onComplete(offsets ?: emptyMap(), error)
        }
    }

    /** The group's committed offsets (`null` where none). */
    fun committed(partitions: Set<TopicPartition>): Map<TopicPartition, OffsetAndMetadata?> = runBlocking {
        mapped { native.committed(partitions.map { it.toFfi() }) }
            .associate { it.partition.toApi() to it.offset?.let { o -> OffsetAndMetadata(o) } }
    }

    /** Moves [partition]'s position to [offset]. */
    fun seek(partition: TopicPartition, offset: Long) = mapped { native.seek(partition.toFfi(), offset) }

    /** Moves positions to the log start. */
    fun seekToBeginning(partitions: Collection<TopicPartition>) =
        mapped { native.seekToBeginning(partitions.map { it.toFfi() }) }

    /** Moves positions to the end. */
    fun seekToEnd(partitions: Collection<TopicPartition>) = mapped { native.seekToEnd(partitions.map { it.toFfi() }) }

    /** The offset of the next record [poll] returns for [partition]. */
    fun position(partition: TopicPartition): Long = runBlocking { mapped { native.position(partition.toFfi()) } }

    /** Log start offsets. */
    fun beginningOffsets(partitions: Collection<TopicPartition>): Map<TopicPartition, Long> =
        watermarks(partitions).mapValues { it.value.first }

    /** High watermarks. */
    fun endOffsets(partitions: Collection<TopicPartition>): Map<TopicPartition, Long> =
        watermarks(partitions).mapValues { it.value.second }

    private fun watermarks(partitions: Collection<TopicPartition>) = runBlocking {
        mapped { native.watermarks(partitions.map { it.toFfi() }) }
            .associate { it.partition.toApi() to (it.low to it.high) }
    }

    /** Stops fetching [partitions]. */
    fun pause(partitions: Collection<TopicPartition>) = mapped { native.pause(partitions.map { it.toFfi() }) }

    /** Resumes [partitions]. */
    fun resume(partitions: Collection<TopicPartition>) = mapped { native.resume(partitions.map { it.toFfi() }) }

    /** The paused partitions. */
    fun paused(): Set<TopicPartition> = native.paused().mapTo(LinkedHashSet()) { it.toApi() }

    /** The group identity for [KafkaProducer.sendOffsetsToTransaction]. */
    fun groupMetadata(): ConsumerGroupMetadata {
        val m = native.groupMetadata() ?: throw IllegalStateException("the consumer has no group.id")
        return ConsumerGroupMetadata(m.groupId, m.memberId, m.generationId, m.groupInstanceId)
    }

    /** Leaves the group (committing with `enable.auto.commit`) and releases the client. */
    override fun close() {
        runBlocking { mapped { native.shutdown() } }
        background.cancel()
        native.destroy()
    }
}
