package dev.odradek.kafka

import java.io.File
import java.nio.file.Files
import java.time.Duration
import java.util.Collections
import java.util.UUID
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.concurrent.thread
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable

/**
 * The Kotlin package on a 3-node Apache Kafka while nodes fail (issue 27), the same scenario as
 * `python/tests/test_cluster_faults.py`: an idempotent acks=all producer and a two-member group
 * run while the fault harness (`tests/cluster/kafka-cluster.sh`) kills the leader of partition
 * 0 and restarts it, pauses a node past the broker session timeout, kills the active controller
 * and cuts a node off from clients. Afterwards: no delivery failed, every acknowledged record
 * was consumed, each partition's log holds each acknowledged record once at its acknowledged
 * offset in send order, the partitions led elsewhere kept acknowledging while a node was cut
 * off, and no commit failed with UNKNOWN_MEMBER_ID (the members' session, 20 s, outlasts every
 * fault).
 *
 * Needs Java and the Kafka jars: runs when ODRADEK_FAULT_CLUSTER=1 (CI's cluster tier sets it).
 */
@EnabledIfEnvironmentVariable(named = "ODRADEK_FAULT_CLUSTER", matches = "1")
class ClusterFaultsTest {
    private val partitions = 6

    /** The harness driving one cluster in a directory of its own. */
    private class Cluster : AutoCloseable {
        private val root = File(System.getProperty("odradek.root") ?: "..").canonicalFile
        private val harness = File(root, "tests/cluster/kafka-cluster.sh")
        private val dir = Files.createTempDirectory("odradek-kt-cluster-").toFile()
        val bootstrap: String = run("start", "3")

        /** Runs a harness command and returns what it printed. */
        fun run(command: String, vararg args: String): String {
            val proc = ProcessBuilder(listOf(harness.path, command, dir.path) + args)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .redirectInput(ProcessBuilder.Redirect.PIPE)
                .start()
            proc.outputStream.close()
            val out = proc.inputStream.bufferedReader().readText().trim()
            check(proc.waitFor(300, TimeUnit.SECONDS)) { "kafka-cluster.sh $command timed out" }
            check(proc.exitValue() == 0) { "kafka-cluster.sh $command ${args.toList()} exited ${proc.exitValue()}" }
            return out
        }

        override fun close() {
            runCatching { run("stop") }
            dir.deleteRecursively()
        }
    }

    private fun leaders(bootstrap: String, topic: String): List<Int?> =
        Admin(mapOf("bootstrap.servers" to bootstrap)).use { admin ->
            runBlocking {
                admin.describeTopics(listOf(topic)).all().getValue(topic).partitions
                    .sortedBy { it.partition }.map { it.leader }
            }
        }

    /** One acknowledgement: the record's sequence number, its offset, when it came. */
    private data class Ack(val seq: Long, val offset: Long, val atNanos: Long)

    @Test
    @Timeout(value = 900, unit = TimeUnit.SECONDS)
    fun `producer and group survive node faults`() = Cluster().use { cluster ->
        val topic = "kt-faults-${UUID.randomUUID().toString().take(8)}"
        Admin(mapOf("bootstrap.servers" to cluster.bootstrap)).use { admin ->
            runBlocking {
                admin.createTopics(
                    listOf(NewTopic(topic, partitions, 3, mapOf("min.insync.replicas" to "2"))),
                ).all()
            }
        }

        val lock = Any()
        val acked = List(partitions) { ArrayList<Ack>() }
        val failures = Collections.synchronizedList(ArrayList<String>())
        val writing = AtomicBoolean(true)
        val producer = KafkaProducer(
            mapOf(
                "bootstrap.servers" to cluster.bootstrap,
                "enable.idempotence" to true,
                "acks" to "all",
                "linger.ms" to 5,
            ),
            ByteArraySerializer,
            ByteArraySerializer,
        )
        val writer = thread(name = "fault-writer") {
            var seq = 0L
            while (writing.get()) {
                for (p in 0 until partitions) {
                    val s = seq
                    producer.send(ProducerRecord(topic, p, value = "$p:$s".toByteArray())) { md, e ->
                        if (e != null || md == null) {
                            failures += "$p: $e"
                        } else {
                            synchronized(lock) { acked[p] += Ack(s, md.offset, System.nanoTime()) }
                        }
                    }
                }
                seq++
                // Bound what waits in the producer while a leader is away.
                while (writing.get() && producer.inFlight() > 20_000) Thread.sleep(5)
                Thread.sleep(10)
            }
            producer.flush()
        }

        val consumed = HashSet<Pair<Int, Long>>()
        val unknownMember = Collections.synchronizedList(ArrayList<Long>())
        val consuming = AtomicBoolean(true)
        val group = "kt-faults-group-${UUID.randomUUID().toString().take(8)}"
        val started = System.nanoTime()
        val members = List(2) { i ->
            thread(name = "fault-member-$i") {
                KafkaConsumer(
                    mapOf(
                        "bootstrap.servers" to cluster.bootstrap,
                        "group.id" to group,
                        "auto.offset.reset" to "earliest",
                        "enable.auto.commit" to false,
                        "session.timeout.ms" to 20000,
                        "heartbeat.interval.ms" to 2000,
                    ),
                    ByteArrayDeserializer,
                    ByteArrayDeserializer,
                ).use { c ->
                    c.subscribe(listOf(topic))
                    var lastCommit = System.nanoTime()
                    while (consuming.get()) {
                        val records = c.poll(Duration.ofMillis(200))
                        synchronized(lock) {
                            for (r in records) {
                                val (p, s) = String(r.value!!).split(":")
                                consumed += p.toInt() to s.toLong()
                            }
                        }
                        if (System.nanoTime() - lastCommit > 1_000_000_000L) {
                            lastCommit = System.nanoTime()
                            c.commitAsync { _, e ->
                                if (e is KafkaException && e.code == UNKNOWN_MEMBER_ID) {
                                    unknownMember += (System.nanoTime() - started) / 1_000_000
                                }
                            }
                        }
                    }
                }
            }
        }

        fun counts() = synchronized(lock) { acked.map { it.size } }
        fun awaitProgress(what: String) {
            val before = counts()
            val deadline = System.nanoTime() + 90_000_000_000L
            while (true) {
                val now = counts()
                val stuck = (0 until partitions).filter { now[it] <= before[it] }
                if (stuck.isEmpty()) return
                check(System.nanoTime() < deadline) { "after $what: partitions $stuck acknowledged nothing" }
                Thread.sleep(100)
            }
        }
        val faults = ArrayList<String>()
        fun fault(command: String, vararg args: String): String {
            faults += "$command ${args.joinToString(" ")} at ${(System.nanoTime() - started) / 1_000_000} ms"
            return cluster.run(command, *args)
        }

        try {
            awaitProgress("start")
            val victim = leaders(cluster.bootstrap, topic)[0].toString()
            fault("kill", victim)
            awaitProgress("killing a leader")
            fault("restart", victim)

            val frozen = leaders(cluster.bootstrap, topic)[1].toString()
            fault("pause", frozen)
            Thread.sleep(9_000)
            awaitProgress("pausing a node")
            fault("resume", frozen)

            val controller = cluster.run("controller")
            fault("kill", controller)
            awaitProgress("killing the controller")
            fault("restart", controller)

            val led = leaders(cluster.bootstrap, topic)
            val cut = led[2]
            fault("cut", cut.toString())
            val cutAt = System.nanoTime()
            Thread.sleep(10_000)
            val healedAt = System.nanoTime()
            fault("heal", cut.toString())
            synchronized(lock) {
                for (p in 0 until partitions) {
                    if (led[p] == cut) continue
                    val during = acked[p].count { it.atNanos >= cutAt + 5_000_000_000L && it.atNanos < healedAt }
                    assertTrue(during > 0, "partition $p acknowledged nothing while node $cut was cut off")
                }
            }
            awaitProgress("healing the cut")
        } finally {
            writing.set(false)
            writer.join(180_000)
        }
        producer.close()

        assertTrue(failures.isEmpty(), "${failures.size} deliveries failed, e.g. ${failures.take(5)}")
        val want = synchronized(lock) { acked.flatMapIndexed { p, acks -> acks.map { p to it.seq } }.toSet() }
        val deadline = System.nanoTime() + 90_000_000_000L
        while (true) {
            val missing = synchronized(lock) { want.count { it !in consumed } }
            if (missing == 0) break
            check(System.nanoTime() < deadline) { "$missing of ${want.size} acknowledged records never consumed" }
            Thread.sleep(200)
        }
        consuming.set(false)
        members.forEach { it.join(60_000) }
        assertTrue(
            unknownMember.isEmpty(),
            "${unknownMember.size} commits failed with UNKNOWN_MEMBER_ID, at $unknownMember ms; faults: $faults",
        )

        // The log: every acknowledged record once, at its offset, in send order.
        KafkaConsumer(
            mapOf("bootstrap.servers" to cluster.bootstrap, "enable.auto.commit" to false, "auto.offset.reset" to "earliest"),
            ByteArrayDeserializer,
            ByteArrayDeserializer,
        ).use { reader ->
            val tps = (0 until partitions).map { TopicPartition(topic, it) }
            reader.assign(tps)
            reader.seekToBeginning(tps)
            val ends = reader.endOffsets(tps)
            val logs = List(partitions) { ArrayList<Pair<Long, Long>>() }
            val readDeadline = System.nanoTime() + 90_000_000_000L
            while (tps.any { reader.position(it) < ends.getValue(it) }) {
                check(System.nanoTime() < readDeadline) { "reading the log did not reach $ends" }
                for (r in reader.poll(Duration.ofMillis(500))) {
                    logs[r.partition] += r.offset to String(r.value!!).split(":")[1].toLong()
                }
            }
            for (p in 0 until partitions) {
                val seqs = logs[p].map { it.second }
                assertEquals(seqs.toSortedSet().toList(), seqs, "partition $p: duplicates or reordering")
                val at = logs[p].toMap()
                for (a in acked[p]) {
                    assertEquals(a.seq, at[a.offset], "partition $p: acknowledged ${a.seq} at ${a.offset}, lost")
                }
            }
        }
    }

    private companion object {
        const val UNKNOWN_MEMBER_ID = 25
    }
}
