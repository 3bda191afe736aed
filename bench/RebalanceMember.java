import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Collections;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java client's group member for bench/client/src/bin/rebalance.rs: one consumer in a
 * group, polling every 10 ms, reporting on stdout (the harness timestamps each line as it
 * reads it):
 *
 *   S                 about to subscribe (the clock of a join starts here)
 *   A p,p,...         its assignment, whenever it changes (empty after "A ")
 *   R p,p,...         the partitions a poll returned records from
 *
 * A line on stdin (or its end) closes the consumer, which leaves the group, then the process
 * exits. STRATEGY is range, cooperative-sticky (classic protocol, session 10 s, heartbeat
 * 500 ms: the settings every client in the benchmark gets) or consumer (KIP-848).
 *
 * Usage: java -cp KAFKA_CLIENTS_CLASSPATH:DIR RebalanceMember BOOTSTRAP TOPIC GROUP STRATEGY
 */
public final class RebalanceMember {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("auto.offset.reset", "latest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        switch (args[3]) {
            case "consumer":
                p.put("group.protocol", "consumer");
                break;
            case "range":
                p.put("partition.assignment.strategy",
                        "org.apache.kafka.clients.consumer.RangeAssignor");
                break;
            case "cooperative-sticky":
                p.put("partition.assignment.strategy",
                        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
                break;
            default:
                throw new IllegalArgumentException("unknown strategy " + args[3]);
        }
        if (!args[3].equals("consumer")) {
            p.put("session.timeout.ms", "10000");
            p.put("heartbeat.interval.ms", "500");
        }
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                in.readLine();
            } catch (Exception ignored) {
                // End of input or a broken pipe: stop as for a line.
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            System.out.println("S");
            System.out.flush();
            consumer.subscribe(Collections.singletonList(args[1]));
            String last = null;
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(10));
                if (!records.isEmpty()) {
                    TreeSet<Integer> from = new TreeSet<>();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        from.add(r.partition());
                    }
                    System.out.println("R " + join(from));
                }
                TreeSet<Integer> owned = new TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) {
                    owned.add(tp.partition());
                }
                String now = join(owned);
                if (!now.equals(last)) {
                    System.out.println("A " + now);
                    last = now;
                }
                System.out.flush();
            }
        }
    }

    private static String join(TreeSet<Integer> parts) {
        StringBuilder b = new StringBuilder();
        for (Integer part : parts) {
            if (b.length() > 0) {
                b.append(',');
            }
            b.append(part);
        }
        return b.toString();
    }
}
