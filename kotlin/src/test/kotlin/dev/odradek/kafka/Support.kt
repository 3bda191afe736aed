package dev.odradek.kafka

import java.time.Duration
import java.util.Properties
import kotlinx.coroutines.runBlocking
import org.apache.kafka.clients.consumer.ConsumerConfig
import org.apache.kafka.clients.producer.ProducerConfig
import org.apache.kafka.common.serialization.ByteArrayDeserializer as JByteArrayDeserializer
import org.apache.kafka.common.serialization.ByteArraySerializer as JByteArraySerializer
import org.apache.kafka.clients.consumer.KafkaConsumer as JavaConsumer
import org.apache.kafka.clients.producer.KafkaProducer as JavaProducer

/** Helpers shared by the test classes: topics, clients of both kinds, polling until done. */
object Support {
    /** Creates [name] with [partitions] partitions through our admin client. */
    fun createTopic(bootstrap: String, name: String, partitions: Int = 4, configs: Map<String, String> = emptyMap()) {
        Admin(mapOf("bootstrap.servers" to bootstrap)).use { admin ->
            runBlocking { admin.createTopics(listOf(NewTopic(name, partitions, configs = configs))).all() }
        }
    }

    /** A Kotlin byte-array producer. */
    fun producer(bootstrap: String, extra: Map<String, Any> = emptyMap()) =
        KafkaProducer(mapOf("bootstrap.servers" to bootstrap, "linger.ms" to 5) + extra, ByteArraySerializer, ByteArraySerializer)

    /** A Kotlin byte-array consumer reading from the beginning. */
    fun consumer(bootstrap: String, extra: Map<String, Any> = emptyMap()) =
        KafkaConsumer(
            mapOf("bootstrap.servers" to bootstrap, "auto.offset.reset" to "earliest") + extra,
            ByteArrayDeserializer,
            ByteArrayDeserializer,
        )

    /** A Java client producer of bytes. */
    fun javaProducer(bootstrap: String, extra: Map<String, Any> = emptyMap()): JavaProducer<ByteArray, ByteArray> {
        val p = Properties()
        p[ProducerConfig.BOOTSTRAP_SERVERS_CONFIG] = bootstrap
        p[ProducerConfig.LINGER_MS_CONFIG] = "5"
        extra.forEach { (k, v) -> p[k] = v.toString() }
        return JavaProducer(p, JByteArraySerializer(), JByteArraySerializer())
    }

    /** A Java client consumer of bytes reading from the beginning. */
    fun javaConsumer(bootstrap: String, extra: Map<String, Any> = emptyMap()): JavaConsumer<ByteArray, ByteArray> {
        val p = Properties()
        p[ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG] = bootstrap
        p[ConsumerConfig.AUTO_OFFSET_RESET_CONFIG] = "earliest"
        p[ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG] = "false"
        extra.forEach { (k, v) -> p[k] = v.toString() }
        return JavaConsumer(p, JByteArrayDeserializer(), JByteArrayDeserializer())
    }

    /** Polls a Kotlin consumer until [n] records arrived (fails after [timeout]). */
    fun <K, V> pollN(c: KafkaConsumer<K, V>, n: Int, timeout: Duration = Duration.ofSeconds(60)): List<ConsumerRecord<K, V>> {
        val out = ArrayList<ConsumerRecord<K, V>>()
        val deadline = System.nanoTime() + timeout.toNanos()
        while (out.size < n) {
            check(System.nanoTime() < deadline) { "only ${out.size} of $n records arrived" }
            out += c.poll(Duration.ofMillis(200))
        }
        return out
    }

    /** Polls a Java consumer until [n] records arrived. */
    fun <K, V> javaPollN(
        c: JavaConsumer<K, V>,
        n: Int,
        timeout: Duration = Duration.ofSeconds(60),
    ): List<org.apache.kafka.clients.consumer.ConsumerRecord<K, V>> {
        val out = ArrayList<org.apache.kafka.clients.consumer.ConsumerRecord<K, V>>()
        val deadline = System.nanoTime() + timeout.toNanos()
        while (out.size < n) {
            check(System.nanoTime() < deadline) { "only ${out.size} of $n records arrived" }
            out += c.poll(Duration.ofMillis(200))
        }
        return out
    }

    /** Polls a Java consumer until it returns nothing for [quiet]. */
    fun <K, V> javaDrain(c: JavaConsumer<K, V>, quiet: Duration = Duration.ofSeconds(2)): List<org.apache.kafka.clients.consumer.ConsumerRecord<K, V>> {
        val out = ArrayList<org.apache.kafka.clients.consumer.ConsumerRecord<K, V>>()
        var lastNews = System.nanoTime()
        while (System.nanoTime() - lastNews < quiet.toNanos()) {
            val got = c.poll(Duration.ofMillis(200))
            if (!got.isEmpty) lastNews = System.nanoTime()
            out += got
        }
        return out
    }
}
