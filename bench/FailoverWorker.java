import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's worker for bench/failover.py: the same protocol as the Python workers.
 * Produces one record every 1/rate s to partition 0 of the topic (idempotent, acks=all,
 * linger.ms=5, otherwise the Java client's defaults) and reads the partition from the start
 * (assigned, no group); prints "ready" once it has an acknowledgement and a record, stops
 * producing at a line on stdin, flushes, waits until every acknowledged record was read (60 s
 * at most) and prints one JSON line: sent, acked, failed, unflushed, missing, duplicates, and
 * the acknowledgement and arrival times (seconds since the epoch).
 *
 * Usage: java -cp KAFKA_CLIENTS_CLASSPATH:DIR FailoverWorker BOOTSTRAP TOPIC RATE
 */
public final class FailoverWorker {
    private static double now() {
        Instant t = Instant.now();
        return t.getEpochSecond() + t.getNano() / 1e9;
    }

    private static String times(List<Double> ts) {
        StringBuilder b = new StringBuilder("[");
        synchronized (ts) {
            for (int i = 0; i < ts.size(); i++) {
                if (i > 0) b.append(',');
                b.append(String.format("%.6f", ts.get(i)));
            }
        }
        return b.append(']').toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        double rate = Double.parseDouble(args[2]);

        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("enable.idempotence", "true");
        pp.put("acks", "all");
        pp.put("linger.ms", "5");
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");

        List<Double> acks = new ArrayList<>();
        List<Double> arrivals = new ArrayList<>();
        Set<Long> acked = new HashSet<>();
        Map<Long, Integer> seen = new HashMap<>();
        AtomicInteger failed = new AtomicInteger();
        AtomicBoolean reading = new AtomicBoolean(true);
        AtomicBoolean stop = new AtomicBoolean(false);

        KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer());
        Thread reader = new Thread(() -> {
            try (KafkaConsumer<byte[], byte[]> consumer =
                    new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                TopicPartition tp = new TopicPartition(topic, 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                while (reading.get()) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(50))) {
                        double t = now();
                        long seq = Long.parseLong(new String(r.value()));
                        synchronized (arrivals) {
                            arrivals.add(t);
                        }
                        synchronized (seen) {
                            seen.merge(seq, 1, Integer::sum);
                        }
                    }
                }
            }
        }, "failover-reader");
        reader.start();
        Thread stdin = new Thread(() -> {
            try {
                new BufferedReader(new InputStreamReader(System.in)).readLine();
            } catch (Exception e) {
                // A closed stdin stops the worker too.
            }
            stop.set(true);
        }, "failover-stdin");
        stdin.setDaemon(true);
        stdin.start();

        long seq = 0;
        boolean ready = false;
        double period = 1.0 / rate;
        double nextAt = now();
        while (!stop.get()) {
            if (now() >= nextAt) {
                final long s = seq;
                producer.send(new ProducerRecord<>(topic, 0, null, Long.toString(s).getBytes()), (md, e) -> {
                    if (e != null) {
                        failed.incrementAndGet();
                        return;
                    }
                    double t = now();
                    synchronized (acks) {
                        acks.add(t);
                        acked.add(s);
                    }
                });
                seq++;
                nextAt += period;
            }
            if (!ready) {
                boolean any;
                synchronized (acks) {
                    any = !acks.isEmpty();
                }
                synchronized (arrivals) {
                    any = any && !arrivals.isEmpty();
                }
                if (any) {
                    System.out.println("ready");
                    System.out.flush();
                    ready = true;
                }
            }
            long sleepNanos = (long) (Math.min(0.001, Math.max(0.0, nextAt - now())) * 1e9);
            if (sleepNanos > 0) Thread.sleep(sleepNanos / 1_000_000, (int) (sleepNanos % 1_000_000));
        }
        producer.flush();
        producer.close(Duration.ofSeconds(60));
        double deadline = now() + 60;
        long missing;
        while (true) {
            Set<Long> want;
            synchronized (acks) {
                want = new HashSet<>(acked);
            }
            synchronized (seen) {
                want.removeAll(seen.keySet());
            }
            missing = want.size();
            if (missing == 0 || now() > deadline) break;
            Thread.sleep(100);
        }
        reading.set(false);
        reader.join(5000);
        int duplicates = 0;
        synchronized (seen) {
            for (int n : seen.values()) duplicates += Math.max(0, n - 1);
        }
        int ackedCount;
        synchronized (acks) {
            ackedCount = acked.size();
        }
        System.out.println("{\"sent\": " + seq + ", \"acked\": " + ackedCount + ", \"failed\": " + failed.get()
                + ", \"unflushed\": 0, \"missing\": " + missing + ", \"duplicates\": " + duplicates
                + ", \"acks\": " + times(acks) + ", \"arrivals\": " + times(arrivals) + "}");
        System.out.flush();
    }
}
