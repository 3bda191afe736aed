package dev.odradek.kafka

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource

/** Topics, groups and offsets through the admin client. */
class AdminTest {
    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `topics, groups and offsets`(broker: Broker) = runBlocking {
        val a = Brokers.topicName("admin-a")
        val b = Brokers.topicName("admin-b")
        Admin(mapOf("bootstrap.servers" to broker.bootstrap)).use { admin ->
            val created = admin.createTopics(listOf(NewTopic(a, 2), NewTopic(b, 1, configs = mapOf("retention.ms" to "3600000"))))
            assertEquals(setOf(a, b), created.all().keys)
            val listed = admin.listTopics()
            assertEquals(2, listed.getValue(a).partitions)
            assertTrue(listed.values.none { it.isInternal })
            assertTrue(admin.listTopics(includeInternal = true).values.any { it.isInternal })
            admin.createPartitions(mapOf(a to 3)).all()
            // Kafka applies new partitions asynchronously: metadata catches up within moments.
            var described = admin.describeTopics(listOf(a)).all().getValue(a)
            val deadline = System.nanoTime() + 30_000_000_000L
            while (described.partitions.size < 3 && System.nanoTime() < deadline) {
                kotlinx.coroutines.delay(100)
                described = admin.describeTopics(listOf(a)).all().getValue(a)
            }
            assertEquals(listOf(0, 1, 2), described.partitions.map { it.partition })
            assertTrue(described.partitions.all { it.leader != null })
            val cluster = admin.describeCluster()
            assertTrue(cluster.nodes.isNotEmpty() && cluster.clusterId.isNotEmpty())

            // A group with committed offsets.
            Support.producer(broker.bootstrap).use { p ->
                (0 until 6).map { p.send(ProducerRecord(a, 0, null, null, "v$it".toByteArray())) }.forEach { it.get() }
            }
            val tp = TopicPartition(a, 0)
            val offsets = admin.listOffsets(mapOf(tp to OffsetSpec.Earliest)).all().getValue(tp)
            assertEquals(0L, offsets.offset)
            assertEquals(6L, admin.listOffsets(mapOf(tp to OffsetSpec.Latest)).all().getValue(tp).offset)
            val group = "g-$a"
            Support.consumer(broker.bootstrap, mapOf("group.id" to group)).use { c ->
                c.subscribe(listOf(a))
                Support.pollN(c, 6)
                c.commitSync()
                val d = admin.describeConsumerGroups(listOf(group)).all().getValue(group)
                assertEquals("Stable", d.state)
                assertEquals(1, d.members.size)
                assertEquals(setOf(0, 1, 2), d.members.single().assignment.map { it.partition }.toSet())
            }
            assertTrue(admin.listConsumerGroups().any { it.groupId == group })
            assertEquals(6L, admin.listConsumerGroupOffsets(group).getValue(tp).offset)
            admin.alterConsumerGroupOffsets(group, mapOf(tp to OffsetAndMetadata(2))).all()
            assertEquals(2L, admin.listConsumerGroupOffsets(group, listOf(tp)).getValue(tp).offset)
            admin.deleteConsumerGroupOffsets(group, listOf(tp)).all()
            assertTrue(tp !in admin.listConsumerGroupOffsets(group, listOf(tp)))
            admin.deleteConsumerGroups(listOf(group)).all()
            assertTrue(admin.listConsumerGroups().none { it.groupId == group })

            admin.deleteTopics(listOf(a, b)).all()
            val gone = admin.listTopics()
            assertTrue(a !in gone && b !in gone)
        }
    }
}
