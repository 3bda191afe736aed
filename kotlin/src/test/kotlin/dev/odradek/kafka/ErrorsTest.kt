package dev.odradek.kafka

import java.time.Duration
import java.util.concurrent.ExecutionException
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource

/** Errors reach Kotlin with Kafka's code, name and class. */
class ErrorsTest {
    private fun cause(e: ExecutionException) = e.cause as KafkaException

    @Test
    fun `unknown configuration keys and bad values are refused by name`() {
        val b = mapOf("bootstrap.servers" to "127.0.0.1:1")
        val e1 = assertThrows<KafkaException> { KafkaProducer(b + ("lnger.ms" to 5), StringSerializer, StringSerializer) }
        assertEquals(KafkaException.INVALID_ARG, e1.code)
        assertEquals("_INVALID_ARG", e1.codeName)
        assertTrue("lnger.ms" in e1.message!!, e1.message)
        val e2 = assertThrows<KafkaException> {
            KafkaProducer(b + ("compression.type" to "brotli"), StringSerializer, StringSerializer)
        }
        assertTrue("compression.type" in e2.message!!, e2.message)
        val e3 = assertThrows<KafkaException> { KafkaConsumer(b + ("group.idd" to "g"), StringDeserializer, StringDeserializer) }
        assertTrue("group.idd" in e3.message!!, e3.message)
        val e4 = assertThrows<KafkaException> { Admin(b + ("request.timeout" to "5")) }
        assertTrue("request.timeout" in e4.message!!, e4.message)
        // A binding-level setting this package does not serve is refused, not ignored.
        val e5 = assertThrows<KafkaException> {
            KafkaConsumer(b + ("enable.partition.eof" to true), StringDeserializer, StringDeserializer)
        }
        assertTrue("enable.partition.eof" in e5.message!!, e5.message)
        assertFalse(e5.isRetriable || e5.isFatal)
    }

    /** Collects what a [ClientErrorListener] hears. */
    private class Heard : ClientErrorListener {
        val errors: MutableList<KafkaException> = java.util.Collections.synchronizedList(ArrayList())
        override fun onError(error: KafkaException) {
            errors += error
        }
        fun allDown() = errors.count { it.code == ClientErrorListener.ALL_BROKERS_DOWN }
        fun await(what: String, done: () -> Boolean) {
            val deadline = System.nanoTime() + 15_000_000_000L
            while (!done()) {
                check(System.nanoTime() < deadline) { "$what: heard ${errors.map { it.message }}" }
                Thread.sleep(50)
            }
        }
    }

    @Test
    fun `clients whose brokers cannot be reached tell their error listener once`() {
        val nowhere = mapOf("bootstrap.servers" to "127.0.0.1:1", "reconnect.backoff.max.ms" to 50)
        val forProducer = Heard()
        val quick = mapOf("linger.ms" to 0, "request.timeout.ms" to 1000, "delivery.timeout.ms" to 1500)
        KafkaProducer(nowhere + quick, StringSerializer, StringSerializer, forProducer).use { p ->
            p.send(ProducerRecord("events", value = "v"))
            forProducer.await("producer") { forProducer.allDown() > 0 }
            Thread.sleep(300)
        }
        assertEquals(1, forProducer.allDown(), "${forProducer.errors.map { it.message }}")
        assertTrue("brokers are down" in forProducer.errors.first().message!!, forProducer.errors.first().message)

        val forConsumer = Heard()
        KafkaConsumer(nowhere + ("group.id" to "events"), StringDeserializer, StringDeserializer, forConsumer).use { c ->
            c.subscribe(listOf("events"))
            val deadline = System.nanoTime() + 15_000_000_000L
            while (forConsumer.allDown() == 0 && System.nanoTime() < deadline) c.poll(Duration.ofMillis(100))
            repeat(3) { c.poll(Duration.ofMillis(100)) }
        }
        assertEquals(1, forConsumer.allDown(), "${forConsumer.errors.map { it.message }}")

        val forAdmin = Heard()
        Admin(nowhere + ("default.api.timeout.ms" to 1000), forAdmin).use { a ->
            assertThrows<KafkaException> { runBlocking { a.listTopics() } }
            forAdmin.await("admin") { forAdmin.allDown() > 0 }
        }
        assertEquals(1, forAdmin.allDown(), "${forAdmin.errors.map { it.message }}")
        // Nothing but "all brokers down" for a bootstrap server that never answers.
        for (h in listOf(forProducer, forConsumer, forAdmin)) {
            assertTrue(h.errors.all { it.code == ClientErrorListener.ALL_BROKERS_DOWN }, "${h.errors.map { it.message }}")
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `a topic that does not exist with auto-creation off`(broker: Broker) {
        val (bootstrap, conf) = broker.noAutoCreate
        val topic = Brokers.topicName("missing")
        Support.producer(bootstrap, conf + ("max.block.ms" to 1500)).use { p ->
            val e = assertThrows<ExecutionException> {
                p.send(ProducerRecord(topic, "v".toByteArray())).get(30, java.util.concurrent.TimeUnit.SECONDS)
            }
            // The client-side code every Odradek shell reports (librdkafka's): the topic was
            // never in metadata within max.block.ms.
            val k = cause(e)
            assertEquals(KafkaException.UNKNOWN_TOPIC, k.code, k.message)
            assertEquals("_UNKNOWN_TOPIC", k.codeName)
            assertTrue(topic in k.message!!, k.message)
            assertFalse(k.isFatal)
        }
        Admin(mapOf("bootstrap.servers" to bootstrap)).use { admin ->
            val d = runBlocking { admin.describeTopics(listOf(topic)) }
            val k = d.getValue(topic).exceptionOrNull() as KafkaException
            assertEquals(KafkaException.UNKNOWN_TOPIC_OR_PARTITION, k.code)
            assertThrows<KafkaException> { d.all() }
            // It stayed missing.
            assertFalse(topic in runBlocking { admin.listTopics() })
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `an existing topic and an oversized record`(broker: Broker) {
        val topic = Brokers.topicName("exists")
        Support.createTopic(broker.bootstrap, topic, partitions = 1)
        Admin(mapOf("bootstrap.servers" to broker.bootstrap)).use { admin ->
            val r = runBlocking { admin.createTopics(listOf(NewTopic(topic, 1))) }
            val k = r.getValue(topic).exceptionOrNull() as KafkaException
            assertEquals(KafkaException.TOPIC_ALREADY_EXISTS, k.code)
            assertFalse(k.isRetriable)
        }
        Support.producer(broker.bootstrap, mapOf("max.request.size" to 1000)).use { p ->
            var called: Exception? = null
            val f = p.send(ProducerRecord(topic, ByteArray(5000))) { _, e -> called = e }
            val k = cause(assertThrows<ExecutionException> { f.get() })
            assertEquals(10, k.code)
            assertEquals("MSG_SIZE_TOO_LARGE", k.codeName)
            assertTrue(called === k)
            // The producer is still usable.
            assertEquals(0, p.send(ProducerRecord(topic, ByteArray(10))).get().partition)
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `a fenced transactional producer gets a fatal error`(broker: Broker) {
        val topic = Brokers.topicName("fenced")
        Support.createTopic(broker.bootstrap, topic, partitions = 1)
        val txnId = "fence-${System.nanoTime()}"
        val conf = mapOf("transactional.id" to txnId)
        Support.producer(broker.bootstrap, conf).use { old ->
            old.initTransactions()
            old.beginTransaction()
            old.send(ProducerRecord(topic, "old".toByteArray())).get()
            Support.producer(broker.bootstrap, conf).use { new ->
                new.initTransactions()
                val e = assertThrows<KafkaException> { old.commitTransaction(Duration.ofSeconds(30)) }
                assertTrue(e.isFatal, "fatal: $e")
                assertTrue(e.code == KafkaException.PRODUCER_FENCED || e.code == 47, e.toString())
                // The new instance works.
                new.beginTransaction()
                new.send(ProducerRecord(topic, "new".toByteArray())).get()
                new.commitTransaction()
            }
        }
    }
}
