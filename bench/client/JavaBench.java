// The Java client (Apache Kafka's kafka-clients 4.4) as a peer of odradek-bench in the producer
// and consumer families (bench/client/run.sh, bench/client/run_consume.sh): the same work as
// `odradek-bench produce` and `consume`, measured the same way, printing the same JSON fields.
// The run scripts compile it against the jars of tests/compat/kafka.sh.
//
//   java -Xmx512M -cp 'kafka-clients…:classes' JavaBench produce --bootstrap HOST:PORT --topic T
//       --count N --size BYTES --acks 1|all --compression none|lz4|zstd [--jit-warmup N]
//       [--property KEY=VALUE]...
//   java -Xmx512M -cp 'kafka-clients…:classes' JavaBench consume --bootstrap HOST:PORT --topic T
//       [--check-crcs true|false] [--expect N] [--jit-warmup N] [--property KEY=VALUE]...
//
// Why a program of our own and not ProducerPerformance / ConsumerPerformance (kafka-tools):
// - ProducerPerformance's callback records a failed send as a sent record and only prints the
//   exception's stack trace (kafka-tools 4.4, ProducerPerformance$PerfCallback), so its record
//   count does not prove delivery; here every callback is counted, ok or failed, and a failure
//   or a shortfall exits 1.
// - ProducerPerformance refills its payload with a random letter per byte for every record
//   inside the measured loop (CPU a real application does not spend there), and random letters
//   do not compress like the text-like values the other clients send; here the values are the
//   exact bytes odradek-bench sends (a port of its `Payloads`, same seed), so lz4/zstd do the
//   same work (the consumer's checksum of first bytes matches odradek's for the same records).
// - Neither tool reports CPU; the others' CPU covers the measured interval only, so this program
//   reads its own utime+stime (/proc/self/stat: every thread of the JVM, JIT compiler and GC
//   threads included) before and after that interval, and VmHWM (/proc/self/status) as peak RSS.
// - ConsumerPerformance joins a group (subscribe); the other consumers use assign() from the
//   beginning without a group, as this one does.
// The client calls are the ones the perf tools make: KafkaProducer.send(record, callback) in a
// loop, KafkaConsumer.poll() in a loop.
//
// produce: one keyless record is sent and acknowledged before the clock starts (connection and
// metadata not measured, as for the other clients). `--jit-warmup N` then sends N more records,
// unmeasured, and waits for them: a fresh JVM otherwise spends the measured interval compiling
// its hot path, which a long-running application did long ago. Then COUNT records are sent with
// send(record, callback), each value a fresh byte[] copied from the payload pool (an application
// hands the producer a new array per record), and flush() waits for every acknowledgement.
// Settings: those every client gets (linger.ms=5, batch.size=1000000, enable.idempotence=false,
// the scenario's acks and compression), PRODUCER_TUNED, then --property pairs.
//
// consume: with `--jit-warmup N`, another consumer in the same JVM first reads N records of the
// topic and closes. Then the measured consumer looks up the topic's partitions and their
// beginning/end offsets before the clock (that is how many records to expect); the clock runs
// from assign() (every partition, auto.offset.reset=earliest, no group, no commits) until the
// last record was returned by poll(); each value's length and first byte are summed, as the
// other consumers do. Settings: check.crcs as given, CONSUMER_TUNED, then --property pairs.
// `--expect N`: exit 1 unless the topic holds exactly N records; reading more or fewer records
// than the topic holds, or 30 s without a record, also exits 1.
//
// Diagnostics go to stderr; one JSON line goes to stdout.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class JavaBench {
    private static final Duration STALL = Duration.ofSeconds(30);

    /**
     * The producer's throughput settings on top of those every client gets (linger.ms=5,
     * batch.size=1000000, enable.idempotence=false): the kernel's own socket send buffer
     * (send.buffer.bytes=-1, "the OS default will be used") instead of the Java client's fixed
     * 128 KiB, as librdkafka and odradek use. buffer.memory stays at 32 MiB (odradek's default
     * too; 128 MiB measured no faster) and max.request.size at 1 MiB (the bound the others get).
     */
    static final String[][] PRODUCER_TUNED = {
        {"send.buffer.bytes", "-1"},
    };

    /**
     * The consumer's throughput settings: the kernel's socket receive buffer instead of the Java
     * client's fixed 64 KiB, 8 MiB per partition per fetch (the Java consumer does not fetch a
     * partition again until its buffered records were returned, so larger fetches mean fewer
     * round trips; fetch.max.bytes stays at 50 MiB) and up to 10,000 records per poll() instead
     * of 500. fetch.min.bytes stays 1: the topic is a backlog, so every fetch already fills to
     * its byte limits, and a minimum above the bytes left at the topic's end would hold the last
     * fetch for fetch.max.wait.ms.
     */
    static final String[][] CONSUMER_TUNED = {
        {"receive.buffer.bytes", "-1"},
        {"max.partition.fetch.bytes", "8388608"},
        {"max.poll.records", "10000"},
    };

    private static String settings(String[][] tuned) {
        StringBuilder b = new StringBuilder();
        for (String[] kv : tuned) {
            b.append(b.length() == 0 ? "" : " ").append(kv[0]).append('=').append(kv[1]);
        }
        return b.toString();
    }

    public static void main(String[] args) {
        try {
            if (args.length < 1) {
                usage();
            }
            List<String[]> flags = flags(Arrays.copyOfRange(args, 1, args.length));
            switch (args[0]) {
                case "produce":
                    produce(flags);
                    break;
                case "consume":
                    consume(flags);
                    break;
                default:
                    usage();
            }
            System.exit(0);
        } catch (Throwable e) {
            System.err.println("JavaBench: " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static void usage() {
        System.err.println("usage: JavaBench produce --bootstrap B --topic T --count N --size S "
                + "--acks 1|all --compression C [--jit-warmup N] [--property K=V]...\n"
                + "       JavaBench consume --bootstrap B --topic T [--check-crcs B] [--expect N] "
                + "[--jit-warmup N] [--property K=V]...");
        System.exit(2);
    }

    // -----------------------------------------------------------------------------------------
    // Arguments

    private static List<String[]> flags(String[] args) {
        List<String[]> out = new ArrayList<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --flag value at `" + args[i] + "`");
            }
            out.add(new String[] {args[i].substring(2), args[i + 1]});
        }
        return out;
    }

    private static String flag(List<String[]> flags, String name, String fallback) {
        String v = fallback;
        for (String[] f : flags) {
            if (f[0].equals(name)) {
                v = f[1];
            }
        }
        if (v == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    private static void check(List<String[]> flags, String... known) {
        for (String[] f : flags) {
            if (!Arrays.asList(known).contains(f[0])) {
                throw new IllegalArgumentException("unknown flag --" + f[0]);
            }
        }
    }

    private static void properties(List<String[]> flags, Properties props) {
        for (String[] f : flags) {
            if (f[0].equals("property")) {
                int eq = f[1].indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("--property needs KEY=VALUE, got " + f[1]);
                }
                props.put(f[1].substring(0, eq), f[1].substring(eq + 1));
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Measurement: the whole JVM process (every thread), as getrusage(RUSAGE_SELF) is for the
    // Rust clients.

    private static final double CLK_TCK = 100.0; // USER_HZ on Linux

    /** utime and stime of this process in seconds (10 ms resolution). */
    private static double[] cpu() throws IOException {
        String s = new String(Files.readAllBytes(Paths.get("/proc/self/stat")),
                StandardCharsets.US_ASCII);
        // comm may contain spaces and parentheses: fields start after the last ')'.
        String[] f = s.substring(s.lastIndexOf(')') + 2).trim().split(" ");
        // f[0] is field 3 (state); utime and stime are fields 14 and 15.
        return new double[] {Long.parseLong(f[11]) / CLK_TCK, Long.parseLong(f[12]) / CLK_TCK};
    }

    /** VmHWM (peak resident set) of this process in kB. */
    private static long peakRssKb() throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
            }
        }
        return -1;
    }

    private static String jvm() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
    }

    // -----------------------------------------------------------------------------------------
    // Payloads: a port of odradek-bench's `Payloads` (bench/client/src/main.rs), byte for byte.

    static final class Payloads {
        static final int SPAN = 4 << 20;
        final byte[] pool;
        final int size;

        private long state = 0x0DDADEC0FFEE0001L;

        /** SplitMix64. */
        private long next() {
            state += 0x9E3779B97F4A7C15L;
            long z = state;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        Payloads(int size) {
            this.size = size;
            byte[][] words = new byte[512][];
            for (int w = 0; w < 512; w++) {
                int len = 2 + (int) Long.remainderUnsigned(next(), 9);
                byte[] word = new byte[len];
                for (int j = 0; j < len; j++) {
                    word[j] = (byte) ('a' + Long.remainderUnsigned(next(), 26));
                }
                words[w] = word;
            }
            int total = SPAN + size;
            byte[] buf = new byte[total + 64];
            int n = 0;
            while (n < total) {
                long r = next();
                byte[] word = words[(int) (r & 511)];
                System.arraycopy(word, 0, buf, n, word.length);
                n += word.length;
                buf[n++] = (byte) ((r >>> 60) == 0 ? ',' : ' ');
                if ((r >>> 58) == 1) {
                    // a number now and then
                    byte[] num = Long.toString((r >>> 20) & 0xFFFFF).getBytes(StandardCharsets.US_ASCII);
                    System.arraycopy(num, 0, buf, n, num.length);
                    n += num.length;
                    buf[n++] = ' ';
                }
            }
            pool = Arrays.copyOf(buf, total);
        }

        /** Record i's value: a fresh array, as an application hands the producer. */
        byte[] value(long i) {
            int o = (int) Long.remainderUnsigned(i * size, SPAN);
            return Arrays.copyOfRange(pool, o, o + size);
        }
    }

    // -----------------------------------------------------------------------------------------
    // produce

    /** Counts every delivery report (runs on the producer's I/O thread). */
    static final class Deliveries implements Callback {
        final AtomicLong ok = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicReference<Exception> first = new AtomicReference<>();

        @Override
        public void onCompletion(org.apache.kafka.clients.producer.RecordMetadata m, Exception e) {
            if (e == null) {
                ok.incrementAndGet();
            } else {
                failed.incrementAndGet();
                first.compareAndSet(null, e);
            }
        }
    }

    private static void produce(List<String[]> flags) throws Exception {
        check(flags, "bootstrap", "topic", "count", "size", "acks", "compression", "jit-warmup",
                "property");
        String topic = flag(flags, "topic", null);
        long count = Long.parseLong(flag(flags, "count", null));
        int size = Integer.parseInt(flag(flags, "size", null));
        String acks = flag(flags, "acks", null);
        if (acks.equals("-1")) {
            acks = "all";
        }
        String compression = flag(flags, "compression", null);
        long warmup = Long.parseLong(flag(flags, "jit-warmup", "0"));

        Properties props = new Properties();
        props.put("bootstrap.servers", flag(flags, "bootstrap", null));
        props.put("client.id", "java-bench");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("linger.ms", "5");
        props.put("batch.size", "1000000");
        props.put("enable.idempotence", "false");
        props.put("acks", acks);
        props.put("compression.type", compression);
        for (String[] kv : PRODUCER_TUNED) {
            props.put(kv[0], kv[1]);
        }
        properties(flags, props);

        Payloads payloads = new Payloads(size);
        Deliveries deliveries = new Deliveries();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            // Prime: connection, metadata, first batch.
            producer.send(new ProducerRecord<>(topic, payloads.value(0))).get();
            if (warmup > 0) {
                for (long i = 0; i < warmup; i++) {
                    producer.send(new ProducerRecord<>(topic, payloads.value(i)), deliveries);
                }
                producer.flush();
                if (deliveries.failed.get() > 0 || deliveries.ok.get() != warmup) {
                    throw new IllegalStateException("JIT warm-up: " + deliveries.failed.get()
                            + " of " + warmup + " deliveries failed (acknowledged "
                            + deliveries.ok.get() + "); first error: " + deliveries.first.get());
                }
                deliveries.ok.set(0);
            }

            double[] before = cpu();
            long started = System.nanoTime();
            for (long i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, payloads.value(i)), deliveries);
            }
            producer.flush();
            double seconds = (System.nanoTime() - started) / 1e9;
            double[] after = cpu();
            long ok = deliveries.ok.get();
            long failed = deliveries.failed.get();
            if (failed > 0 || ok != count) {
                throw new IllegalStateException("java: " + failed + " of " + count
                        + " deliveries failed (acknowledged " + ok + "); first error: "
                        + deliveries.first.get());
            }
            double user = after[0] - before[0];
            double sys = after[1] - before[1];
            long bytes = count * size;
            int partitions = producer.partitionsFor(topic).size();
            System.out.println(String.format(java.util.Locale.ROOT,
                    "{\"client\":\"java\",\"msgs\":%d,\"bytes\":%d,\"seconds\":%.4f,"
                            + "\"msgs_per_s\":%.1f,\"mb_per_s\":%.3f,\"cpu_user_s\":%.4f,"
                            + "\"cpu_sys_s\":%.4f,\"cpu_us_per_msg\":%.4f,\"peak_rss_kb\":%d,"
                            + "\"size\":%d,\"acks\":\"%s\",\"compression\":\"%s\",\"partitions\":%d,"
                            + "\"topic\":\"%s\",\"runtime\":\"jvm\",\"mode\":\"plain\","
                            + "\"commit_every\":null,\"jit_warmup_records\":%d,\"jvm\":\"%s\","
                            + "\"java_settings\":\"%s\"}",
                    count, bytes, seconds, count / seconds, bytes / 1e6 / seconds, user, sys,
                    (user + sys) * 1e6 / count, peakRssKb(), size, acks, compression, partitions,
                    topic, warmup, jvm(), settings(PRODUCER_TUNED)));
        }
    }

    // -----------------------------------------------------------------------------------------
    // consume

    private static void consume(List<String[]> flags) throws Exception {
        check(flags, "bootstrap", "topic", "check-crcs", "expect", "jit-warmup", "property");
        String topic = flag(flags, "topic", null);
        String crcs = String.valueOf(Boolean.parseBoolean(flag(flags, "check-crcs", "false")));
        long expect = Long.parseLong(flag(flags, "expect", "-1"));
        long warmup = Long.parseLong(flag(flags, "jit-warmup", "0"));

        Properties props = new Properties();
        props.put("bootstrap.servers", flag(flags, "bootstrap", null));
        props.put("client.id", "java-bench-consume");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("check.crcs", crcs);
        for (String[] kv : CONSUMER_TUNED) {
            props.put(kv[0], kv[1]);
        }
        properties(flags, props);

        if (warmup > 0) {
            // Another consumer in this JVM reads the first records, then closes: the JIT has
            // compiled the fetch and poll path before the measured consumer starts.
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
                List<TopicPartition> partitions = new ArrayList<>();
                for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                    partitions.add(new TopicPartition(topic, p.partition()));
                }
                consumer.assign(partitions);
                long read = 0;
                long lastProgress = System.nanoTime();
                while (read < warmup) {
                    int n = consumer.poll(Duration.ofMillis(500)).count();
                    if (n > 0) {
                        lastProgress = System.nanoTime();
                    } else if (System.nanoTime() - lastProgress > STALL.toNanos()) {
                        throw new IllegalStateException("JIT warm-up stalled at " + read);
                    }
                    read += n;
                }
            }
        }

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            Map<TopicPartition, Long> low = consumer.beginningOffsets(partitions, Duration.ofSeconds(30));
            Map<TopicPartition, Long> high = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            long expected = 0;
            for (TopicPartition tp : partitions) {
                expected += high.get(tp) - low.get(tp);
            }
            if (expect >= 0 && expected != expect) {
                throw new IllegalStateException("topic " + topic + " holds " + expected
                        + " records, expected " + expect);
            }

            double[] before = cpu();
            long started = System.nanoTime();
            consumer.assign(partitions);
            long msgs = 0;
            long valueBytes = 0;
            long checksum = 0;
            long lastProgress = System.nanoTime();
            while (msgs < expected) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    if (System.nanoTime() - lastProgress > STALL.toNanos()) {
                        throw new IllegalStateException("stalled at " + msgs + " of " + expected);
                    }
                    continue;
                }
                lastProgress = System.nanoTime();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    msgs++;
                    byte[] v = r.value();
                    if (v != null) {
                        valueBytes += v.length;
                        checksum += v.length > 0 ? (v[0] & 0xFF) : 0;
                    }
                }
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            double[] after = cpu();
            if (msgs != expected) {
                throw new IllegalStateException("read " + msgs + " records, expected " + expected);
            }
            double cpu = (after[0] - before[0]) + (after[1] - before[1]);
            System.out.println(String.format(java.util.Locale.ROOT,
                    "{\"client\":\"java\",\"topic\":\"%s\",\"partitions\":%d,\"msgs\":%d,"
                            + "\"value_bytes\":%d,\"checksum\":%d,\"seconds\":%.4f,"
                            + "\"msgs_per_s\":%.1f,\"mb_per_s\":%.3f,\"cpu_s\":%.4f,"
                            + "\"cpu_us_per_msg\":%.4f,\"peak_rss_kb\":%d,\"check_crcs\":%s,"
                            + "\"jit_warmup_records\":%d,\"jvm\":\"%s\",\"java_settings\":\"%s\"}",
                    topic, partitions.size(), msgs, valueBytes, checksum, seconds, msgs / seconds,
                    valueBytes / 1e6 / seconds, cpu, cpu * 1e6 / Math.max(1, msgs), peakRssKb(),
                    crcs, warmup, jvm(), settings(CONSUMER_TUNED)));
        }
    }
}
