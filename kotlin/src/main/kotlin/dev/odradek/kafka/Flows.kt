package dev.odradek.kafka

import java.time.Duration
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.isActive

/**
 * The consumer's records as a cold [Flow]: polls (suspending, [pollTimeout] at a time) for as
 * long as the collector runs, emitting records in poll order. Cancel the collecting coroutine,
 * or use `take(n)`, to stop. Commit from the collector with [KafkaConsumer.commitAwait].
 */
fun <K, V> KafkaConsumer<K, V>.asFlow(pollTimeout: Duration = Duration.ofMillis(100)): Flow<ConsumerRecord<K, V>> =
    flow {
        while (currentCoroutineContext().isActive) {
            for (record in pollAwait(pollTimeout)) emit(record)
        }
    }
