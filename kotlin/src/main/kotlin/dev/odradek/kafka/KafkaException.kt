package dev.odradek.kafka

import dev.odradek.kafka.ffi.ErrorInfo
import dev.odradek.kafka.ffi.NativeException

/**
 * Every error of this package: Kafka's error code as is (e.g. 3 `UNKNOWN_TOPIC_OR_PARTITION`),
 * or a negative client-side code (e.g. -186 `_INVALID_ARG` for a configuration key that does
 * not exist, named in the message), and its class.
 *
 * @property code the numeric code.
 * @property codeName the code's name.
 * @property isRetriable whether retrying may succeed.
 * @property isFatal whether this client instance cannot continue (a fenced producer).
 * @property txnRequiresAbort whether the current transaction must be aborted.
 */
open class KafkaException(
    val code: Int,
    val codeName: String,
    message: String,
    val isRetriable: Boolean,
    val isFatal: Boolean,
    val txnRequiresAbort: Boolean,
) : RuntimeException("$codeName: $message") {
    /** Well-known codes. */
    companion object Codes {
        /** `_INVALID_ARG`: a bad argument or configuration. */
        const val INVALID_ARG = -186
        /** `_MSG_TIMED_OUT`: a record was not delivered in time. */
        const val MSG_TIMED_OUT = -192
        /** `_UNKNOWN_TOPIC`: the topic does not exist (client-side). */
        const val UNKNOWN_TOPIC = -188
        /** `UNKNOWN_TOPIC_OR_PARTITION`. */
        const val UNKNOWN_TOPIC_OR_PARTITION = 3
        /** `TOPIC_ALREADY_EXISTS`. */
        const val TOPIC_ALREADY_EXISTS = 36
        /** `UNSUPPORTED_VERSION` (also: an unknown entity type in a client quota filter). */
        const val UNSUPPORTED_VERSION = 35
        /** `INVALID_REQUEST` (also: a client quota alteration the broker refuses). */
        const val INVALID_REQUEST = 42
        /** `PRODUCER_FENCED`. */
        const val PRODUCER_FENCED = 90
    }
}

/** The exception for an error value (a delivery report, one item of an admin call). */
internal fun ErrorInfo.toException(): KafkaException =
    KafkaException(code, name, detail, retriable, fatal, txnRequiresAbort)

/** Maps the generated layer's exception to [KafkaException]. */
internal fun NativeException.toKafka(): KafkaException = when (this) {
    is NativeException.Kafka -> info.toException().also { it.initCause(this) }
}

/** Runs [block], rethrowing the generated layer's errors as [KafkaException]. */
internal inline fun <T> mapped(block: () -> T): T =
    try {
        block()
    } catch (e: NativeException) {
        throw e.toKafka()
    }

/** A per-item outcome as a [Result]. */
internal fun ErrorInfo?.toResult(): Result<Unit> =
    if (this == null) Result.success(Unit) else Result.failure(toException())

/** The values of per-item results, throwing the first failure (the Java client's `all()`). */
fun <K, V> Map<K, Result<V>>.all(): Map<K, V> = mapValues { (_, r) -> r.getOrThrow() }
