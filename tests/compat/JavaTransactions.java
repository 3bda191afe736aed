// The Java client's transactional producer and read_committed consumer against a broker:
// commit and abort, sendOffsetsToTransaction with a consumer group, and zombie fencing.
// Run as a single-file program (Java 17+) with the Kafka client jars on the classpath:
//   java -cp "$(tests/compat/kafka.sh classpath)" tests/compat/JavaTransactions.java HOST:PORT TOPIC
// Prints "OK" and exits 0 when every check holds; otherwise prints the failure and exits 1.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaTransactions {
    static String bootstrap;

    static KafkaProducer<String, String> producer(String txnId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "30000");
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group, String isolation) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /** Every value from the start of partition 0 up to its end for `isolation`. */
    static List<String> readAll(String topic, String isolation) {
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer("reader-" + System.nanoTime(), isolation)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < end) {
                check(System.currentTimeMillis() < deadline, "reader timed out at " + c.position(tp) + " of " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r.value());
                }
            }
        }
        return out;
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) {
        bootstrap = args[0];
        String topic = args[1];
        try {
            run(topic);
        } catch (Throwable t) {
            System.out.println("FAILED: " + t);
            t.printStackTrace(System.out);
            System.exit(1);
        }
        System.out.println("OK");
        System.exit(0);
    }

    static void run(String topic) throws Exception {
        try (KafkaProducer<String, String> p = producer("java-" + topic)) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 3; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, "commit-" + i));
            }
            p.commitTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "abort"));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "last"));
            p.commitTransaction();
        }
        List<String> committed = readAll(topic, "read_committed");
        check(committed.equals(List.of("commit-0", "commit-1", "commit-2", "last")), "read_committed got " + committed);
        List<String> all = readAll(topic, "read_uncommitted");
        check(all.equals(List.of("commit-0", "commit-1", "commit-2", "abort", "last")), "read_uncommitted got " + all);

        // Consume-transform-produce: offsets commit with the transaction.
        String group = "java-group-" + System.nanoTime();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = consumer(group, "read_committed");
             KafkaProducer<String, String> p = producer("java-ctp-" + topic)) {
            p.initTransactions();
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < 4) {
                check(System.currentTimeMillis() < deadline, "group consumer got only " + got.size());
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "derived"));
            long next = got.get(got.size() - 1).offset() + 1;
            p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(next)), c.groupMetadata());
            p.commitTransaction();
            OffsetAndMetadata stored = c.committed(Set.of(tp)).get(tp);
            check(stored != null && stored.offset() == next, "committed offset " + stored + ", want " + next);
        }

        // Zombie fencing.
        KafkaProducer<String, String> zombie = producer("java-fence-" + topic);
        zombie.initTransactions();
        zombie.beginTransaction();
        zombie.send(new ProducerRecord<>(topic, 0, null, "zombie")).get();
        try (KafkaProducer<String, String> fresh = producer("java-fence-" + topic)) {
            fresh.initTransactions();
            fresh.beginTransaction();
            fresh.send(new ProducerRecord<>(topic, 0, null, "fresh"));
            fresh.commitTransaction();
        }
        boolean fenced = false;
        try {
            zombie.send(new ProducerRecord<>(topic, 0, null, "zombie-2"));
            zombie.commitTransaction();
        } catch (ProducerFencedException | InvalidProducerEpochException e) {
            fenced = true;
        } catch (KafkaException e) {
            fenced = e.getCause() instanceof ProducerFencedException
                || e.getCause() instanceof InvalidProducerEpochException;
            if (!fenced) {
                throw e;
            }
        } finally {
            zombie.close(Duration.ofSeconds(5));
        }
        check(fenced, "the zombie was not fenced");
        List<String> after = readAll(topic, "read_committed");
        check(!after.contains("zombie") && after.contains("fresh"), "after fencing read_committed got " + after);
    }
}
