package dev.odradek.kafka

import java.time.Duration
import java.util.concurrent.CopyOnWriteArrayList
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource

/** Seek, positions, commits, the revoke callback, pause and the Flow. */
class ConsumerApiTest {
    private fun fill(bootstrap: String, topic: String, n: Int, from: Int = 0) =
        Support.producer(bootstrap).use { p ->
            (from until from + n).map { p.send(ProducerRecord(topic, 0, null, null, "v$it".toByteArray())) }.map { it.get() }
        }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `seek, position and watermarks`(broker: Broker) {
        val topic = Brokers.topicName("seek")
        Support.createTopic(broker.bootstrap, topic, partitions = 1)
        fill(broker.bootstrap, topic, 20)
        val tp = TopicPartition(topic, 0)
        Support.consumer(broker.bootstrap).use { c ->
            c.assign(listOf(tp))
            assertEquals(mapOf(tp to 0L), c.beginningOffsets(listOf(tp)))
            assertEquals(mapOf(tp to 20L), c.endOffsets(listOf(tp)))
            c.seek(tp, 10)
            val got = Support.pollN(c, 10)
            assertEquals((10L until 20L).toList(), got.map { it.offset })
            assertEquals("v10", String(got.first().value!!))
            assertEquals(20L, c.position(tp))
            c.seekToBeginning(listOf(tp))
            assertEquals(0L, Support.pollN(c, 1).first().offset)
            c.pause(listOf(tp))
            assertEquals(setOf(tp), c.paused())
            c.seekToEnd(listOf(tp))
            // Evaluated lazily, as in Java: position() resolves it before the next record.
            assertEquals(20L, c.position(tp))
            assertTrue(c.poll(Duration.ofMillis(300)).isEmpty())
            c.resume(listOf(tp))
            fill(broker.bootstrap, topic, 1, from = 20)
            assertEquals(listOf(20L), Support.pollN(c, 1).map { it.offset })
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `commits survive the consumer and the revoke callback can commit`(broker: Broker) {
        val topic = Brokers.topicName("commit")
        val group = "g-$topic"
        Support.createTopic(broker.bootstrap, topic, partitions = 1)
        fill(broker.bootstrap, topic, 20)
        val tp = TopicPartition(topic, 0)
        val conf = mapOf("group.id" to group, "enable.auto.commit" to false)
        val revoked = CopyOnWriteArrayList<Collection<TopicPartition>>()
        Support.consumer(broker.bootstrap, conf).use { c ->
            c.subscribe(
                listOf(topic),
                object : ConsumerRebalanceListener {
                    override fun onPartitionsRevoked(partitions: Collection<TopicPartition>) {
                        revoked += partitions
                        c.commitSync() // commits the 15 polled below, from inside the callback
                    }

                    override fun onPartitionsAssigned(partitions: Collection<TopicPartition>) {}
                },
            )
            assertEquals(setOf(topic), c.subscription())
            val first = Support.pollN(c, 10)
            c.commitSync(mapOf(tp to OffsetAndMetadata(first[9].offset + 1, "ten")))
            assertEquals(mapOf(tp to OffsetAndMetadata(10)), c.committed(setOf(tp)))
            // Read 5 more (one poll may return them all: seek back to be exact), and unsubscribe.
            c.seek(tp, 10)
            val next = ArrayList<ConsumerRecord<ByteArray, ByteArray>>()
            while (next.size < 5) next += c.poll(Duration.ofMillis(200)).filter { it.offset < 15 }
            c.seek(tp, 15)
            c.unsubscribe()
            assertEquals(listOf(listOf(tp)), revoked.map { it.toList() })
        }
        Admin(mapOf("bootstrap.servers" to broker.bootstrap)).use { admin ->
            val offsets = runBlocking { admin.listConsumerGroupOffsets(group) }
            assertEquals(15L, offsets.getValue(tp).offset)
        }
        // A new member resumes where the group committed.
        Support.consumer(broker.bootstrap, conf).use { c ->
            c.subscribe(listOf(topic))
            assertEquals(15L, Support.pollN(c, 5).first().offset)
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `records as a Flow`(broker: Broker) {
        val topic = Brokers.topicName("flow")
        Support.createTopic(broker.bootstrap, topic, partitions = 1)
        fill(broker.bootstrap, topic, 30)
        Support.consumer(broker.bootstrap, mapOf("group.id" to "g-$topic", "max.poll.records" to 7)).use { c ->
            c.subscribe(listOf(topic))
            val values = runBlocking {
                withTimeout(60_000) { c.asFlow().take(30).map { String(it.value!!) }.toList() }
            }
            assertEquals((0 until 30).map { "v$it" }, values)
            runBlocking { c.commitAwait() }
            assertEquals(30L, c.committed(setOf(TopicPartition(topic, 0))).values.single()!!.offset)
            // max.poll.records holds per poll.
            c.seekToBeginning(listOf(TopicPartition(topic, 0)))
            assertTrue(Support.pollN(c, 1).size <= 7)
        }
        Support.consumer(broker.bootstrap).use { c ->
            assertNull(runCatching { c.groupMetadata() }.getOrNull())
        }
    }
}
