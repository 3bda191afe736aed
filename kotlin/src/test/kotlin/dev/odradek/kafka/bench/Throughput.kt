package dev.odradek.kafka.bench

import dev.odradek.kafka.Admin
import dev.odradek.kafka.ByteArrayDeserializer
import dev.odradek.kafka.ByteArraySerializer
import dev.odradek.kafka.KafkaConsumer
import dev.odradek.kafka.KafkaProducer
import dev.odradek.kafka.NewTopic
import dev.odradek.kafka.ProducerRecord
import dev.odradek.kafka.TopicPartition
import dev.odradek.kafka.all
import java.nio.ByteBuffer
import java.time.Duration
import java.util.BitSet
import java.util.Properties
import java.util.concurrent.atomic.AtomicLong
import kotlinx.coroutines.runBlocking
import org.apache.kafka.clients.consumer.KafkaConsumer as JavaConsumer
import org.apache.kafka.clients.producer.KafkaProducer as JavaProducer
import org.apache.kafka.clients.producer.ProducerRecord as JavaRecord
import org.apache.kafka.common.TopicPartition as JavaTopicPartition
import org.apache.kafka.common.serialization.ByteArrayDeserializer as JByteArrayDeserializer
import org.apache.kafka.common.serialization.ByteArraySerializer as JByteArraySerializer

/**
 * Produce and consume throughput of the Kotlin package next to the Java client, in one JVM,
 * against one broker, interleaved round by round: the same record count and sizes, the same
 * producer settings (the Java client's throughput settings: linger.ms, batch.size, acks=1,
 * compression none, idempotence off), every record's delivery confirmed and every record read
 * back checked by its sequence number (the key).
 *
 *     Throughput BOOTSTRAP [RECORDS] [VALUE_BYTES] [ROUNDS]
 *
 * Prints one line per client and phase per round, then a summary with medians and ratios.
 */
object Throughput {
    private const val PARTITIONS = 4
    private val producerSettings = mapOf(
        "linger.ms" to "5",
        "batch.size" to "262144",
        "acks" to "1",
        "compression.type" to "none",
        "enable.idempotence" to "false",
    )

    private fun key(i: Int) = ByteBuffer.allocate(4).putInt(i).array()

    private fun seq(key: ByteArray) = ByteBuffer.wrap(key).int

    /** Seconds to produce [n] records with the Kotlin producer; every delivery checked. */
    private fun kotlinProduce(bootstrap: String, topic: String, n: Int, value: ByteArray): Double {
        val ok = AtomicLong()
        val failed = AtomicLong()
        val t0 = System.nanoTime()
        KafkaProducer(mapOf("bootstrap.servers" to bootstrap) + producerSettings, ByteArraySerializer, ByteArraySerializer)
            .use { p ->
                for (i in 0 until n) {
                    p.send(ProducerRecord(topic, key(i), value)) { _, e -> if (e == null) ok.incrementAndGet() else failed.incrementAndGet() }
                }
                p.flush()
            }
        val s = (System.nanoTime() - t0) / 1e9
        check(ok.get() == n.toLong() && failed.get() == 0L) { "kotlin: ${ok.get()} delivered, ${failed.get()} failed" }
        return s
    }

    /** Seconds to produce [n] records with the Java client; every delivery checked. */
    private fun javaProduce(bootstrap: String, topic: String, n: Int, value: ByteArray): Double {
        val props = Properties()
        props["bootstrap.servers"] = bootstrap
        producerSettings.forEach { (k, v) -> props[k] = v }
        val ok = AtomicLong()
        val failed = AtomicLong()
        val t0 = System.nanoTime()
        JavaProducer(props, JByteArraySerializer(), JByteArraySerializer()).use { p ->
            for (i in 0 until n) {
                p.send(JavaRecord(topic, key(i), value)) { _, e -> if (e == null) ok.incrementAndGet() else failed.incrementAndGet() }
            }
            p.flush()
        }
        val s = (System.nanoTime() - t0) / 1e9
        check(ok.get() == n.toLong() && failed.get() == 0L) { "java: ${ok.get()} delivered, ${failed.get()} failed" }
        return s
    }

    /** Seconds to read [n] records with the Kotlin consumer; each sequence number once. */
    private fun kotlinConsume(bootstrap: String, topic: String, n: Int, size: Int): Double {
        val seen = BitSet(n)
        var count = 0
        val t0 = System.nanoTime()
        KafkaConsumer(
            mapOf("bootstrap.servers" to bootstrap, "auto.offset.reset" to "earliest", "max.poll.records" to 2000),
            ByteArrayDeserializer,
            ByteArrayDeserializer,
        ).use { c ->
            c.assign((0 until PARTITIONS).map { TopicPartition(topic, it) })
            while (count < n) {
                for (r in c.poll(Duration.ofMillis(500))) {
                    check(r.value!!.size == size)
                    val i = seq(r.key!!)
                    check(!seen[i]) { "record $i read twice" }
                    seen.set(i)
                    count++
                }
            }
        }
        val s = (System.nanoTime() - t0) / 1e9
        check(seen.cardinality() == n)
        return s
    }

    /** Seconds to read [n] records with the Java client; each sequence number once. */
    private fun javaConsume(bootstrap: String, topic: String, n: Int, size: Int): Double {
        val props = Properties()
        props["bootstrap.servers"] = bootstrap
        props["auto.offset.reset"] = "earliest"
        props["enable.auto.commit"] = "false"
        props["max.poll.records"] = "2000"
        val seen = BitSet(n)
        var count = 0
        val t0 = System.nanoTime()
        JavaConsumer(props, JByteArrayDeserializer(), JByteArrayDeserializer()).use { c ->
            c.assign((0 until PARTITIONS).map { JavaTopicPartition(topic, it) })
            while (count < n) {
                for (r in c.poll(Duration.ofMillis(500))) {
                    check(r.value().size == size)
                    val i = seq(r.key())
                    check(!seen[i]) { "record $i read twice" }
                    seen.set(i)
                    count++
                }
            }
        }
        val s = (System.nanoTime() - t0) / 1e9
        check(seen.cardinality() == n)
        return s
    }

    @JvmStatic
    fun main(args: Array<String>) {
        val bootstrap = args.getOrNull(0) ?: error("usage: Throughput BOOTSTRAP [RECORDS] [VALUE_BYTES] [ROUNDS]")
        val n = args.getOrNull(1)?.toInt() ?: 500_000
        val size = args.getOrNull(2)?.toInt() ?: 100
        val rounds = args.getOrNull(3)?.toInt() ?: 3
        val value = ByteArray(size) { (it % 251).toByte() }
        val results = mutableMapOf<String, MutableList<Double>>()
        val admin = Admin(mapOf("bootstrap.servers" to bootstrap))
        fun record(name: String, seconds: Double) {
            results.getOrPut(name) { mutableListOf() } += seconds
            println("%-16s %8.0f msgs/s %7.1f MB/s (%.2f s)".format(name, n / seconds, n * size / seconds / 1e6, seconds))
        }
        for (round in 1..rounds) {
            val kt = "bench-kt-${System.nanoTime()}"
            val jv = "bench-java-${System.nanoTime()}"
            runBlocking { admin.createTopics(listOf(NewTopic(kt, PARTITIONS), NewTopic(jv, PARTITIONS))).all() }
            println("round $round: $n records of $size B, $PARTITIONS partitions")
            // Alternate which client goes first, so neither always meets a warmer broker.
            if (round % 2 == 1) {
                record("kotlin produce", kotlinProduce(bootstrap, kt, n, value))
                record("java produce", javaProduce(bootstrap, jv, n, value))
                record("kotlin consume", kotlinConsume(bootstrap, kt, n, size))
                record("java consume", javaConsume(bootstrap, jv, n, size))
            } else {
                record("java produce", javaProduce(bootstrap, jv, n, value))
                record("kotlin produce", kotlinProduce(bootstrap, kt, n, value))
                record("java consume", javaConsume(bootstrap, jv, n, size))
                record("kotlin consume", kotlinConsume(bootstrap, kt, n, size))
            }
            runBlocking { admin.deleteTopics(listOf(kt, jv)) }
        }
        admin.close()
        fun median(name: String) = results.getValue(name).sorted()[rounds / 2]
        println("summary (median of $rounds rounds, $n records of $size B):")
        for (phase in listOf("produce", "consume")) {
            val k = n / median("kotlin $phase")
            val j = n / median("java $phase")
            println("  %-8s kotlin %8.0f msgs/s  java %8.0f msgs/s  kotlin/java %.2f".format(phase, k, j, k / j))
        }
    }
}
