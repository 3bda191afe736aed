package dev.odradek.kafka

import dev.odradek.kafka.ffi.RebalanceListener
import dev.odradek.kafka.ffi.TopicPartition as FfiTopicPartition
import java.util.concurrent.atomic.AtomicReference

/**
 * Rebalance callbacks (the Java client's `ConsumerRebalanceListener`), called inside
 * [KafkaConsumer.poll] on the polling thread: [onPartitionsRevoked] while the partitions are
 * still assigned (commit them here), [onPartitionsAssigned] once the new ones are (seek here).
 */
interface ConsumerRebalanceListener {
    /** Partitions taken away in an orderly rebalance. */
    fun onPartitionsRevoked(partitions: Collection<TopicPartition>)

    /** Partitions assigned. */
    fun onPartitionsAssigned(partitions: Collection<TopicPartition>)

    /** Partitions lost without a chance to commit; by default the same as a revoke. */
    fun onPartitionsLost(partitions: Collection<TopicPartition>) = onPartitionsRevoked(partitions)
}

/** The native listener: forwards to the application's, keeping what it threw for `poll`. */
internal class RebalanceAdapter(private val listener: ConsumerRebalanceListener) : RebalanceListener {
    /** The first exception a callback threw, rethrown by the `poll` it happened in. */
    val thrown = AtomicReference<Throwable?>(null)

    private inline fun guarded(block: () -> Unit) {
        try {
            block()
        } catch (t: Throwable) {
            thrown.compareAndSet(null, t)
        }
    }

    override fun onPartitionsRevoked(partitions: List<FfiTopicPartition>) =
        guarded { listener.onPartitionsRevoked(partitions.map { it.toApi() }) }

    override fun onPartitionsAssigned(partitions: List<FfiTopicPartition>) =
        guarded { listener.onPartitionsAssigned(partitions.map { it.toApi() }) }

    override fun onPartitionsLost(partitions: List<FfiTopicPartition>) =
        guarded { listener.onPartitionsLost(partitions.map { it.toApi() }) }

    /** Rethrows (once) what a callback threw. */
    fun rethrow() {
        thrown.getAndSet(null)?.let { throw it }
    }
}
