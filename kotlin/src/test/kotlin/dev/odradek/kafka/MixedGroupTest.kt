package dev.odradek.kafka

import java.time.Duration
import java.util.Collections
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicReference
import kotlin.concurrent.thread
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource

/**
 * One consumer group with a Kotlin member and a Java client member: the partitions are
 * shared between them, every record is read exactly once by the owner of its partition, and
 * what each commits is what the group has.
 */
class MixedGroupTest {
    private class Member(val name: String) {
        val assignment = AtomicReference<Set<Int>>(emptySet())
        val records = Collections.synchronizedList(ArrayList<Pair<Int, Long>>())
        val failure = AtomicReference<Throwable?>(null)
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `a group of Kotlin and Java members shares partitions and loses nothing`(broker: Broker) {
        val topic = Brokers.topicName("group")
        val group = "g-$topic"
        Support.createTopic(broker.bootstrap, topic, partitions = 4)
        val stop = AtomicBoolean(false)
        val kt = Member("kotlin")
        val java = Member("java")
        val assignedEvents = ConcurrentHashMap.newKeySet<Int>()

        val ktThread = thread(name = "kotlin-member") {
            try {
                Support.consumer(broker.bootstrap, mapOf("group.id" to group, "enable.auto.commit" to false)).use { c ->
                    c.subscribe(
                        listOf(topic),
                        object : ConsumerRebalanceListener {
                            override fun onPartitionsRevoked(partitions: Collection<TopicPartition>) {
                                // Still assigned here: the Java client's contract.
                                assertTrue(c.assignment().containsAll(partitions))
                                c.commitSync()
                            }

                            override fun onPartitionsAssigned(partitions: Collection<TopicPartition>) {
                                assertTrue(c.assignment().containsAll(partitions))
                                partitions.forEach { assignedEvents += it.partition }
                            }
                        },
                    )
                    while (!stop.get()) {
                        val got = c.poll(Duration.ofMillis(100))
                        got.forEach { kt.records += it.partition to it.offset }
                        if (!got.isEmpty()) c.commitSync()
                        kt.assignment.set(c.assignment().map { it.partition }.toSet())
                    }
                }
            } catch (t: Throwable) {
                kt.failure.set(t)
            }
        }
        val javaThread = thread(name = "java-member") {
            try {
                Support.javaConsumer(broker.bootstrap, mapOf("group.id" to group)).use { j ->
                    j.subscribe(listOf(topic))
                    while (!stop.get()) {
                        val got = j.poll(Duration.ofMillis(100))
                        got.forEach { java.records += it.partition() to it.offset() }
                        if (!got.isEmpty) j.commitSync()
                        java.assignment.set(j.assignment().map { it.partition() }.toSet())
                    }
                }
            } catch (t: Throwable) {
                java.failure.set(t)
            }
        }
        try {
            // Wait for a stable group of two before producing, so both read.
            val deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos()
            while (true) {
                val a = kt.assignment.get()
                val b = java.assignment.get()
                if (a.isNotEmpty() && b.isNotEmpty() && a.intersect(b).isEmpty() && (a + b) == setOf(0, 1, 2, 3)) break
                check(System.nanoTime() < deadline) { "no stable shared assignment: kotlin $a java $b" }
                check(kt.failure.get() == null && java.failure.get() == null) { "a member failed" }
                Thread.sleep(50)
            }
            val n = 400
            val produced = Support.producer(broker.bootstrap).use { p ->
                (0 until n).map { p.send(ProducerRecord(topic, "k$it".toByteArray(), "v$it".toByteArray())) }
                    .map { it.get() }
                    .map { it.partition to it.offset }
            }
            val deadline2 = System.nanoTime() + Duration.ofSeconds(60).toNanos()
            while (kt.records.size + java.records.size < n) {
                check(System.nanoTime() < deadline2) { "consumed ${kt.records.size} + ${java.records.size} of $n" }
                Thread.sleep(50)
            }
            Thread.sleep(300)
            stop.set(true)
            ktThread.join(60_000)
            javaThread.join(60_000)
            kt.failure.get()?.let { throw AssertionError("kotlin member failed", it) }
            java.failure.get()?.let { throw AssertionError("java member failed", it) }

            val all = kt.records + java.records
            assertEquals(produced.toSet(), all.toSet(), "every record read")
            assertEquals(n, all.size, "and read once")
            val ka = kt.assignment.get()
            assertTrue(kt.records.all { it.first in ka }, "kotlin read only its partitions $ka")
            assertTrue(java.records.all { it.first !in ka }, "java read only its partitions")
            assertTrue(kt.records.isNotEmpty() && java.records.isNotEmpty())
            assertTrue(assignedEvents.containsAll(ka), "the listener saw $ka assigned: $assignedEvents")

            // What both committed is what the group has: the end of every partition.
            val ends = produced.groupBy { it.first }.mapValues { (_, v) -> v.maxOf { it.second } + 1 }
            Admin(mapOf("bootstrap.servers" to broker.bootstrap)).use { admin ->
                val committed = runBlocking { admin.listConsumerGroupOffsets(group) }
                assertEquals(ends, committed.mapKeys { it.key.partition }.mapValues { it.value.offset })
            }
        } finally {
            stop.set(true)
            ktThread.join(60_000)
            javaThread.join(60_000)
        }
    }
}
