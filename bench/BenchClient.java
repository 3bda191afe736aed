// Client side of bench/broker_vs_kafka.sh: the same program is used against both brokers.
//
//   java -cp 'kafka-libs/*:classes' BenchClient create BOOTSTRAP NAME:PARTITIONS...
//       Creates the topics (replication factor 1) in one CreateTopics call; existing ones are ok.
//   java -cp 'kafka-libs/*:classes' BenchClient consume BOOTSTRAP TOPIC EXPECTED [KEY=VALUE...]
//       Reads every partition of TOPIC from offset 0 with assign() (no group, no commits) until
//       EXPECTED records arrived, as fast as it can, and prints one JSON line on stdout:
//       {"records":N,"bytes":B,"seconds":S,"first_record_seconds":F,"fetch_total":…,
//        "fetch_latency_avg_ms":…,"fetch_latency_max_ms":…,"fetch_size_avg":…} (the last four are
//       the client's consumer-fetch-manager-metrics, over the whole run)
//       The clock starts just before the first poll() (metadata lookup and assignment excluded)
//       and stops when the last expected record was returned. Extra KEY=VALUE pairs are consumer
//       properties (defaults are the Java client's own: fetch.min.bytes=1, fetch.max.wait.ms=500,
//       max.partition.fetch.bytes=1 MiB, fetch.max.bytes=50 MiB, max.poll.records=500,
//       check.crcs=true).
//
// Diagnostics go to stderr. Exit 1 when records stop arriving for 30 s before EXPECTED.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class BenchClient {
    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("create")) {
            create(args);
        } else if (args.length >= 4 && args[0].equals("consume")) {
            System.exit(consume(args));
        } else {
            System.err.println("usage: BenchClient create BOOTSTRAP NAME:PARTITIONS...\n"
                    + "       BenchClient consume BOOTSTRAP TOPIC EXPECTED [KEY=VALUE...]");
            System.exit(2);
        }
    }

    private static void create(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "bench-admin");
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            int colon = args[i].lastIndexOf(':');
            topics.add(new NewTopic(args[i].substring(0, colon),
                    Integer.parseInt(args[i].substring(colon + 1)), (short) 1));
        }
        try (Admin admin = Admin.create(props)) {
            var results = admin.createTopics(topics).values();
            for (var e : results.entrySet()) {
                try {
                    e.getValue().get();
                } catch (ExecutionException ex) {
                    if (!(ex.getCause() instanceof TopicExistsException)) {
                        throw new RuntimeException("creating " + e.getKey(), ex.getCause());
                    }
                }
            }
        }
    }

    /** A consumer-fetch-manager metric (client-wide, no topic tag) as a JSON number, or null. */
    private static String metric(KafkaConsumer<?, ?> consumer, String name) {
        for (var e : consumer.metrics().entrySet()) {
            MetricName n = e.getKey();
            if (n.group().equals("consumer-fetch-manager-metrics") && n.name().equals(name)
                    && !n.tags().containsKey("topic")) {
                Object v = e.getValue().metricValue();
                if (v instanceof Double d && !d.isNaN() && !d.isInfinite()) {
                    return String.format("%.3f", d);
                }
            }
        }
        return "null";
    }

    private static int consume(String[] args) {
        String topic = args[2];
        long expected = Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "bench-consumer");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        ByteArrayDeserializer de = new ByteArrayDeserializer();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, de, de)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                parts.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long records = 0;
            long bytes = 0;
            long first = -1;
            long start = System.nanoTime();
            long lastProgress = start;
            while (records < expected) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(200));
                long now = System.nanoTime();
                if (batch.isEmpty()) {
                    if (now - lastProgress > 30_000_000_000L) {
                        System.err.printf("BenchClient: stalled at %d of %d records%n", records, expected);
                        return 1;
                    }
                    continue;
                }
                if (first < 0) {
                    first = now;
                }
                lastProgress = now;
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    records++;
                    if (r.value() != null) {
                        bytes += r.value().length;
                    }
                    if (r.key() != null) {
                        bytes += r.key().length;
                    }
                }
            }
            long end = System.nanoTime();
            System.out.printf("{\"records\":%d,\"bytes\":%d,\"seconds\":%.6f,\"first_record_seconds\":%.6f,"
                    + "\"fetch_total\":%s,\"fetch_latency_avg_ms\":%s,\"fetch_latency_max_ms\":%s,"
                    + "\"fetch_size_avg\":%s}%n",
                    records, bytes, (end - start) / 1e9, (first - start) / 1e9,
                    metric(consumer, "fetch-total"), metric(consumer, "fetch-latency-avg"),
                    metric(consumer, "fetch-latency-max"), metric(consumer, "fetch-size-avg"));
            return 0;
        }
    }
}
