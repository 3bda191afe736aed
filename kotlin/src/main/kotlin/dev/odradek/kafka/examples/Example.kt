package dev.odradek.kafka.examples

import dev.odradek.kafka.Admin
import dev.odradek.kafka.ConsumerRebalanceListener
import dev.odradek.kafka.KafkaConsumer
import dev.odradek.kafka.KafkaProducer
import dev.odradek.kafka.NewTopic
import dev.odradek.kafka.ProducerRecord
import dev.odradek.kafka.StringDeserializer
import dev.odradek.kafka.StringSerializer
import dev.odradek.kafka.TopicPartition
import dev.odradek.kafka.all
import dev.odradek.kafka.asFlow
import java.time.Duration
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking

/**
 * The package in one page: create a topic, produce keyed records (futures and a coroutine),
 * consume them in a group as a Flow, commit. Run with the bootstrap address as the argument:
 *
 *     java -cp ... dev.odradek.kafka.examples.ExampleKt 127.0.0.1:9092
 *
 * Prints one line per record and, last, `example: N records round-tripped`.
 */
fun main(args: Array<String>) = runBlocking {
    val bootstrap = args.firstOrNull() ?: "127.0.0.1:9092"
    val topic = "example-${System.currentTimeMillis()}"
    val count = 10

    Admin(mapOf("bootstrap.servers" to bootstrap)).use { admin ->
        admin.createTopics(listOf(NewTopic(topic, numPartitions = 2))).all()
    }

    val producerConfig = mapOf("bootstrap.servers" to bootstrap, "linger.ms" to 5, "compression.type" to "zstd")
    KafkaProducer(producerConfig, StringSerializer, StringSerializer).use { producer ->
        val futures = (0 until count - 1).map { i -> producer.send(ProducerRecord(topic, "key-$i", "value-$i")) }
        val last = producer.sendAwait(ProducerRecord(topic, "key-last", "the last one"))
        futures.forEach { it.get() }
        println("example: last record at partition ${last.partition} offset ${last.offset}")
    }

    val consumerConfig = mapOf(
        "bootstrap.servers" to bootstrap,
        "group.id" to "example-group-$topic",
        "auto.offset.reset" to "earliest",
        "enable.auto.commit" to false,
    )
    KafkaConsumer(consumerConfig, StringDeserializer, StringDeserializer).use { consumer ->
        consumer.subscribe(
            listOf(topic),
            object : ConsumerRebalanceListener {
                override fun onPartitionsAssigned(partitions: Collection<TopicPartition>) =
                    println("example: assigned $partitions")

                override fun onPartitionsRevoked(partitions: Collection<TopicPartition>) =
                    println("example: revoked $partitions")
            },
        )
        val records = consumer.asFlow().take(count).toList()
        records.forEach { println("example: ${it.topic}-${it.partition}@${it.offset} ${it.key}=${it.value}") }
        consumer.commitAwait()
        println("example: ${records.size} records round-tripped")
    }
}
