package dev.odradek.kafka

import dev.odradek.kafka.ffi.DeliveryListener
import dev.odradek.kafka.ffi.DeliveryReport
import dev.odradek.kafka.ffi.NativeException
import dev.odradek.kafka.ffi.NativeProducer
import dev.odradek.kafka.ffi.OffsetCommit
import dev.odradek.kafka.ffi.OutgoingRecord
import dev.odradek.kafka.ffi.GroupMetadata as FfiGroupMetadata
import dev.odradek.kafka.ffi.Header as FfiHeader
import java.time.Duration
import java.util.Properties
import java.util.concurrent.CompletableFuture
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.Executors
import java.util.concurrent.ScheduledExecutorService
import java.util.concurrent.TimeUnit
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
 * [errorListener] hears client-level errors (brokers down: [ClientErrorListener]).
 */
class KafkaProducer<K, V> @JvmOverloads constructor(
    config: Map<String, Any?>,
    private val keySerializer: Serializer<K>,
    private val valueSerializer: Serializer<V>,
    errorListener: ClientErrorListener? = null,
) : AutoCloseable {
    /** From `Properties`. */
    @JvmOverloads
    constructor(
        config: Properties,
        keySerializer: Serializer<K>,
        valueSerializer: Serializer<V>,
        errorListener: ClientErrorListener? = null,
    ) : this(config.entries.associate { (k, v) -> k.toString() to v }, keySerializer, valueSerializer, errorListener)

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

    private val native: NativeProducer = mapped { NativeProducer(stringify(config), Reports(pending), errorListener?.let(::ClientErrorAdapter)) }

    /**
     * Records handed to [send] and not yet to the native producer: they cross the boundary in
     * batches (each foreign call allocates a few JNA structures, which would cost more than the
     * rest of a send), at [HANDOFF_BATCH] records or [HANDOFF_DELAY_US] after the first, and
     * before every flush, transaction step and close. With `linger.ms=0` records go at once.
     */
    private val handoff = ArrayList<OutgoingRecord>(HANDOFF_BATCH)
    private var handoffFirstId = 0L
    private val handoffLock = Any()
    private val batching = config["linger.ms"]?.toString()?.trim() != "0"
    private val timer = if (batching) HandoffTimer.executor else null

    /**
     * Sends [record]; the future completes with where it was written. Errors found before the
     * record is queued (too large, closed, `buffer.memory` still full after `max.block.ms`)
     * complete the future exceptionally, with the callback called, as in Java.
     */
    fun send(record: ProducerRecord<K, V>, callback: Callback? = null): CompletableFuture<RecordMetadata> {
        val key = keySerializer.serialize(record.topic, record.key)
        val value = valueSerializer.serialize(record.topic, record.value)
        val future = CompletableFuture<RecordMetadata>()
        val out = OutgoingRecord(
            record.topic,
            record.partition,
            key,
            value,
            record.headers.map { FfiHeader(it.key, it.value) },
            record.timestamp,
        )
        val p = Pending(record.topic, key?.size ?: -1, value?.size ?: -1, future, callback)
        synchronized(handoffLock) {
            val id = ids.incrementAndGet()
            pending[id] = p
            if (!batching) {
                handOver(listOf(out), id)
                return future
            }
            if (handoff.isEmpty()) {
                handoffFirstId = id
                timer?.schedule({ drain() }, HANDOFF_DELAY_US, TimeUnit.MICROSECONDS)
            }
            handoff += out
            if (handoff.size >= HANDOFF_BATCH) drainLocked()
        }
        return future
    }

    /** Hands every buffered record to the native producer. */
    private fun drain() = synchronized(handoffLock) { drainLocked() }

    private fun drainLocked() {
        if (handoff.isEmpty()) return
        val batch = ArrayList(handoff)
        handoff.clear()
        handOver(batch, handoffFirstId)
    }

    /** Sends [batch] (ids from [firstId]); fails the futures of refused records. */
    private fun handOver(batch: List<OutgoingRecord>, firstId: Long) {
        val refused = try {
            native.sendBatch(batch, firstId.toULong())
        } catch (e: Exception) {
            // The native producer is gone (closed): every record of the batch is refused.
            val k = (e as? NativeException)?.toKafka() ?: KafkaException(-197, "_DESTROY", e.toString(), false, false, false)
            batch.indices.forEach { fail(firstId + it, k) }
            return
        }
        for (r in refused) fail(firstId + r.index.toLong(), r.error.toException())
    }

    private fun fail(id: Long, e: KafkaException) {
        val p = pending.remove(id) ?: return
        try {
            p.callback?.onCompletion(null, e)
        } catch (t: Throwable) {
            System.err.println("odradek: producer callback threw: $t")
        } finally {
            p.future.completeExceptionally(e)
        }
    }

    private companion object HandoffTimer {
        /** Records per handoff. */
        const val HANDOFF_BATCH = 512
        /** The longest a record waits in the handoff buffer. */
        const val HANDOFF_DELAY_US = 500L
        /** One daemon thread for every producer's handoff deadlines. */
        val executor: ScheduledExecutorService by lazy {
            Executors.newSingleThreadScheduledExecutor { r -> Thread(r, "odradek-handoff").apply { isDaemon = true } }
        }
    }

    /** [send], suspending until the record is written; throws [KafkaException] on failure. */
    suspend fun sendAwait(record: ProducerRecord<K, V>): RecordMetadata = send(record).await()

    /** Sends everything queued now and waits until every record sent before is resolved. */
    fun flush() = runBlocking { flushAwait() }

    /** [flush] for coroutines. */
    suspend fun flushAwait() {
        drain()
        mapped { native.flush() }
    }

    /** Registers `transactional.id`, fencing older instances; once, before transactions. */
    fun initTransactions(timeout: Duration = Duration.ofMinutes(1)) =
        runBlocking { mapped { native.initTransactions(timeout.toMillis().toULong()) } }

    /** Starts a transaction. */
    fun beginTransaction() {
        drain()
        mapped { native.beginTransaction() }
    }

    /** Commits a consumer's offsets with the transaction (exactly-once read-process-write). */
    fun sendOffsetsToTransaction(offsets: Map<TopicPartition, OffsetAndMetadata>, group: ConsumerGroupMetadata) =
        runBlocking {
            drain()
            val list = offsets.map { (tp, o) -> OffsetCommit(tp.toFfi(), o.offset, o.metadata) }
            val g = FfiGroupMetadata(group.groupId, group.memberId, group.generationId, group.groupInstanceId)
            mapped { native.sendOffsetsToTransaction(list, g) }
        }

    /** Delivers the transaction's records, then commits it. */
    fun commitTransaction(timeout: Duration = Duration.ofMinutes(1)) = runBlocking { commitTransactionAwait(timeout) }

    /** [commitTransaction] for coroutines. */
    suspend fun commitTransactionAwait(timeout: Duration = Duration.ofMinutes(1)) {
        drain()
        mapped { native.commitTransaction(timeout.toMillis().toULong()) }
    }

    /** Aborts the transaction; its records are never visible to read_committed consumers. */
    fun abortTransaction(timeout: Duration = Duration.ofMinutes(1)) = runBlocking { abortTransactionAwait(timeout) }

    /** [abortTransaction] for coroutines. */
    suspend fun abortTransactionAwait(timeout: Duration = Duration.ofMinutes(1)) {
        drain()
        mapped { native.abortTransaction(timeout.toMillis().toULong()) }
    }

    /** Records sent whose outcome is not known yet. */
    fun inFlight(): Long = synchronized(handoffLock) { handoff.size.toLong() } + native.inFlight().toLong()

    /** Delivers what is queued (bounded by `delivery.timeout.ms`) and releases the client. */
    override fun close() {
        drain()
        runBlocking { mapped { native.shutdown() } }
        native.destroy()
    }
}
