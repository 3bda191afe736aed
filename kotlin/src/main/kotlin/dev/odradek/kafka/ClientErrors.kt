package dev.odradek.kafka

import dev.odradek.kafka.ffi.ErrorInfo
import dev.odradek.kafka.ffi.ClientErrorListener as FfiClientErrorListener

/**
 * Client-level errors of a producer, consumer or admin client, librdkafka's `error_cb` (an
 * extension: the Java client only logs them): a broker that cannot be reached any more
 * (`_TRANSPORT`, once until it answers again), every known broker down (`_ALL_BROKERS_DOWN`,
 * once each time), an authentication failure; the same code at most once a second. The client
 * carries on after each (it reconnects and rebootstraps by itself); the listener is for
 * alerting and health checks.
 *
 * Called on a client thread for producers and admin clients and inside [KafkaConsumer.poll] on
 * the polling thread for consumers; keep it short. An exception it throws is printed and
 * dropped.
 */
fun interface ClientErrorListener {
    /** One error, with its code ([KafkaException.code]) and message. */
    fun onError(error: KafkaException)

    companion object Codes {
        /** `_TRANSPORT`: a broker cannot be reached any more. */
        const val TRANSPORT = -195
        /** `_ALL_BROKERS_DOWN`: every known broker is down. */
        const val ALL_BROKERS_DOWN = -187
    }
}

/** The native side's listener, handing each error to [listener]. */
internal class ClientErrorAdapter(private val listener: ClientErrorListener) : FfiClientErrorListener {
    override fun onError(error: ErrorInfo) {
        try {
            listener.onError(error.toException())
        } catch (t: Throwable) {
            System.err.println("odradek: client error listener threw: $t")
        }
    }
}
