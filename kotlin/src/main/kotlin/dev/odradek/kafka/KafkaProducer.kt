package dev.odradek.kafka

import dev.odradek.kafka.ffi.DeliveryListener
import dev.odradek.kafka.ffi.DeliveryReport
import dev.odradek.kafka.ffi.NativeProducer
import dev.odradek.kafka.ffi.OffsetCommit
import dev.odradek.kafka.ffi.OutgoingRecord
import dev.odradek.kafka.ffi.GroupMetadata as FfiGroupMetadata
import dev.odradek.kafka.ffi.Header as FfiHeader
import java.time.Duration
import java.util.Properties
import java.util.concurrent.CompletableFuture
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong
import kotlinx.coroutines.future.await
import kotlinx.coroutines.runBlocking

/** Called once per record when its delivery is resolved (the Java client's `Callback`). */
fun interface Callback {
    /** Exactly one of [metadata] and [exception] is non-null. */
    fun onCompletion(metadata: RecordMetadata?, exception: Exception?)
}

/**
 * A Kafka producer shaped like the Java client's `KafkaProducer`, over Odradek's native core.
 *
 * [config] takes Kafka property names (`bootstrap.servers`, `linger.ms`, `batch.size`,
 * `compression.type`, `acks`, `enable.idempotence`, `transactional.id`, ...); an unknown key or
 * a bad value throws [KafkaException] naming the key. Serializers are passed here, not as
 * class names in the configuration.
 *
 * [send] never waits for the broker: it returns a future completed (and calls the callback,
 * on a client thread: keep it short) when the record is written or has failed. Blocking calls
 * ([flush], the transaction calls) have `suspend` twins for coroutines ([flushAwait], ...).
 * Thread-safe.
 */
class KafkaProducer<K, V>(
    config: Map<String, Any?>,
    private val keySerializer: Serializer<K>,
    private val valueSerializer: Serializer<V>,
) : AutoCloseable {
    /** From `Properties`. */
    constructor(config: Properties, keySerializer: Serializer<K>, valueSerializer: Serializer<V>) :
        this(config.entries.associate { (k, v) -> k.toString() to v }, keySerializer, valueSerializer)

    private class Pending(
        val topic: String,
        val keySize: Int,
        val valueSize: Int,
        val future: CompletableFuture<RecordMetadata>,
        val callback: Callback?,
    )

    private val pending = ConcurrentHashMap<Long, Pending>()
    private val ids = AtomicLong()

    /** Resolves futures and callbacks from the native batches of reports. */
    private class Reports(private val pending: ConcurrentHashMap<Long, Pending>) : DeliveryListener {
        override fun onDeliveries(reports: List<DeliveryReport>) {
            for (r in reports) {
                val p = pending.remove(r.id.toLong()) ?: continue
                val error = r.error
                if (error == null) {
                    val md = RecordMetadata(p.topic, r.partition, r.offset, r.timestamp, p.keySize, p.valueSize)
                    p.complete(md, null)
                } else {
                    p.complete(null, error.toException())
                }
            }
        }

        private fun Pending.complete(md: RecordMetadata?, e: KafkaException?) {
            try {
                callback?.onCompletion(md, e)
            } catch (t: Throwable) {
                // A callback must not stop the reports of the others.
                System.err.println("odradek: producer callback threw: $t")
            }
            if (e == null) future.complete(md) else future.completeExceptionally(e)
        }
    }

    private val native: NativeProducer = mapped { NativeProducer(stringify(config), Reports(pending)) }

    /**
     * Sends [record]; the future completes with where it was written. Errors found before the
     * record is queued (too large, closed, `buffer.memory` still full after `max.block.ms`)
     * complete the future exceptionally at once, with the callback called, as in Java.
     */
    fun send(record: ProducerRecord<K, V>, callback: Callback? = null): CompletableFuture<RecordMetadata> {
        val key = keySerializer.serialize(record.topic, record.key)
        val value = valueSerializer.serialize(record.topic, record.value)
        val future = CompletableFuture<RecordMetadata>()
        val id = ids.incrementAndGet()
        val p = Pending(record.topic, key?.size ?: -1, value?.size ?: -1, future, callback)
        pending[id] = p
        val out = OutgoingRecord(
            record.topic,
            record.partition,
            key,
            value,
            record.headers.map { FfiHeader(it.key, it.value) },
            record.timestamp,
        )
        try {
            mapped { native.send(out, id.toULong()) }
        } catch (e: KafkaException) {
            pending.remove(id)
            try {
                callback?.onCompletion(null, e)
            } finally {
                future.completeExceptionally(e)
            }
        }
        return future
    }

    /** [send], suspending until the record is written; throws [KafkaException] on failure. */
    suspend fun sendAwait(record: ProducerRecord<K, V>): RecordMetadata = send(record).await()

    /** Sends everything queued now and waits until every record sent before is resolved. */
    fun flush() = runBlocking { flushAwait() }

    /** [flush] for coroutines. */
    suspend fun flushAwait() = mapped { native.flush() }

    /** Registers `transactional.id`, fencing older instances; once, before transactions. */
    fun initTransactions(timeout: Duration = Duration.ofMinutes(1)) =
        runBlocking { mapped { native.initTransactions(timeout.toMillis().toULong()) } }

    /** Starts a transaction. */
    fun beginTransaction() = mapped { native.beginTransaction() }

    /** Commits a consumer's offsets with the transaction (exactly-once read-process-write). */
    fun sendOffsetsToTransaction(offsets: Map<TopicPartition, OffsetAndMetadata>, group: ConsumerGroupMetadata) =
        runBlocking {
            val list = offsets.map { (tp, o) -> OffsetCommit(tp.toFfi(), o.offset, o.metadata) }
            val g = FfiGroupMetadata(group.groupId, group.memberId, group.generationId, group.groupInstanceId)
            mapped { native.sendOffsetsToTransaction(list, g) }
        }

    /** Delivers the transaction's records, then commits it. */
    fun commitTransaction(timeout: Duration = Duration.ofMinutes(1)) = runBlocking { commitTransactionAwait(timeout) }

    /** [commitTransaction] for coroutines. */
    suspend fun commitTransactionAwait(timeout: Duration = Duration.ofMinutes(1)) =
        mapped { native.commitTransaction(timeout.toMillis().toULong()) }

    /** Aborts the transaction; its records are never visible to read_committed consumers. */
    fun abortTransaction(timeout: Duration = Duration.ofMinutes(1)) = runBlocking { abortTransactionAwait(timeout) }

    /** [abortTransaction] for coroutines. */
    suspend fun abortTransactionAwait(timeout: Duration = Duration.ofMinutes(1)) =
        mapped { native.abortTransaction(timeout.toMillis().toULong()) }

    /** Records sent whose outcome is not known yet. */
    fun inFlight(): Long = native.inFlight().toLong()

    /** Delivers what is queued (bounded by `delivery.timeout.ms`) and releases the client. */
    override fun close() {
        runBlocking { mapped { native.shutdown() } }
        native.destroy()
    }
}
