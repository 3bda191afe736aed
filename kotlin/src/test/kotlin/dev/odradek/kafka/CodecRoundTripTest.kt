package dev.odradek.kafka

import java.util.stream.Stream
import org.apache.kafka.clients.producer.ProducerRecord as JavaRecord
import org.apache.kafka.common.TopicPartition as JavaTopicPartition
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.Arguments
import org.junit.jupiter.params.provider.MethodSource

/**
 * Every codec both ways: records the Kotlin producer compressed are read back by the Kotlin
 * consumer and by the Java client; records the Java client compressed are read by Kotlin.
 */
class CodecRoundTripTest {
    companion object {
        @JvmStatic
        fun cases(): Stream<Arguments> = Brokers.both().stream().flatMap { b ->
            listOf("none", "gzip", "snappy", "lz4", "zstd").stream().map { Arguments.of(b, it) }
        }
    }

    private fun value(i: Int): ByteArray =
        ("value $i " + "abcdefgh".repeat(1 + i % 50)).toByteArray()

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    fun `records round-trip through every codec`(broker: Broker, codec: String) {
        val topic = Brokers.topicName("codec-$codec")
        Support.createTopic(broker.bootstrap, topic, partitions = 2)
        val n = 300
        val sent = Support.producer(broker.bootstrap, mapOf("compression.type" to codec)).use { p ->
            val futures = (0 until n).map { i ->
                p.send(
                    ProducerRecord(
                        topic,
                        key = "k-$i".toByteArray(),
                        value = value(i),
                        headers = listOf(Header("i", i.toString().toByteArray()), Header("null", null)),
                    ),
                )
            }
            p.flush()
            futures.map { it.get() }
        }
        assertEquals(n, sent.size)
        // Offsets are unique per partition and both partitions were used (keys hash apart).
        assertEquals(n, sent.map { it.partition to it.offset }.toSet().size)
        assertEquals(setOf(0, 1), sent.map { it.partition }.toSet())

        Support.consumer(broker.bootstrap).use { c ->
            c.assign(listOf(TopicPartition(topic, 0), TopicPartition(topic, 1)))
            val got = Support.pollN(c, n).sortedBy { String(it.key!!).removePrefix("k-").toInt() }
            assertEquals(n, got.size)
            got.forEachIndexed { i, r ->
                assertEquals("k-$i", String(r.key!!))
                assertTrue(value(i).contentEquals(r.value), "value $i")
                assertEquals(listOf(Header("i", i.toString().toByteArray()), Header("null", null)), r.headers)
                assertEquals(sent[i].partition to sent[i].offset, r.partition to r.offset)
                assertEquals(TimestampType.CREATE_TIME, r.timestampType)
            }
        }

        Support.javaConsumer(broker.bootstrap).use { j ->
            j.assign(listOf(JavaTopicPartition(topic, 0), JavaTopicPartition(topic, 1)))
            val values = Support.javaPollN(j, n).map { String(it.value()) }.toSet()
            assertEquals((0 until n).map { String(value(it)) }.toSet(), values)
        }

        // And the other way: the Java client compresses, Kotlin decompresses.
        val m = 100
        Support.javaProducer(broker.bootstrap, mapOf("compression.type" to codec)).use { jp ->
            (0 until m).map { jp.send(JavaRecord(topic, 0, "j-$it".toByteArray(), value(it))) }.forEach { it.get() }
        }
        Support.consumer(broker.bootstrap).use { c ->
            c.assign(listOf(TopicPartition(topic, 0)))
            val fromJava = Support.pollN(c, sent.count { it.partition == 0 } + m)
                .filter { String(it.key!!).startsWith("j-") }
            assertEquals((0 until m).map { "j-$it" }, fromJava.map { String(it.key!!) })
            assertTrue(fromJava.withIndex().all { (i, r) -> value(i).contentEquals(r.value) })
        }
    }
}
