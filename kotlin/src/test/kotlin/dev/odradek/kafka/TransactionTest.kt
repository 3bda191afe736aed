package dev.odradek.kafka

import org.apache.kafka.common.TopicPartition as JavaTopicPartition
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource

/** Transactions produced by Kotlin, read by the Java client with read_committed. */
class TransactionTest {
    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `aborted transactions are invisible to read_committed readers`(broker: Broker) {
        val topic = Brokers.topicName("txn")
        Support.createTopic(broker.bootstrap, topic, partitions = 2)
        val n = 50
        Support.producer(broker.bootstrap, mapOf("transactional.id" to "kt-${System.nanoTime()}")).use { p ->
            p.initTransactions()
            for ((label, commit) in listOf("c1" to true, "a" to false, "c2" to true)) {
                p.beginTransaction()
                val futures = (0 until n).map { p.send(ProducerRecord(topic, "$label-$it".toByteArray(), "$label-$it".toByteArray())) }
                if (commit) {
                    p.commitTransaction()
                    futures.forEach { assertTrue(it.get().offset >= 0) }
                } else {
                    p.flush()
                    p.abortTransaction()
                }
            }
        }
        val committed = (0 until n).map { "c1-$it" } + (0 until n).map { "c2-$it" }
        val parts = listOf(JavaTopicPartition(topic, 0), JavaTopicPartition(topic, 1))

        Support.javaConsumer(broker.bootstrap, mapOf("isolation.level" to "read_committed")).use { j ->
            j.assign(parts)
            val values = Support.javaDrain(j).map { String(it.value()) }
            assertEquals(committed.toSet(), values.toSet())
            assertEquals(committed.size, values.size)
        }
        // The aborted records are in the log: a read_uncommitted reader sees them.
        Support.javaConsumer(broker.bootstrap, mapOf("isolation.level" to "read_uncommitted")).use { j ->
            j.assign(parts)
            val values = Support.javaDrain(j).map { String(it.value()) }
            assertEquals(3 * n, values.size)
            assertEquals(n, values.count { it.startsWith("a-") })
        }
        // Our consumer agrees with Java's.
        Support.consumer(broker.bootstrap, mapOf("isolation.level" to "read_committed")).use { c ->
            c.assign(listOf(TopicPartition(topic, 0), TopicPartition(topic, 1)))
            val values = Support.pollN(c, committed.size).map { String(it.value!!) }
            assertEquals(committed.toSet(), values.toSet())
            assertTrue(c.poll(java.time.Duration.ofSeconds(1)).isEmpty())
        }
    }
}
