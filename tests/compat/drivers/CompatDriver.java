// Compatibility-matrix driver for the Apache Kafka Java client (kafka-clients from kafka.sh's jars).
//
//   java -cp "$(tests/compat/kafka.sh classpath):CLASSES" CompatDriver ACTION --bootstrap HOST:PORT [...]
//
// Speaks the driver protocol of tests/compat/README.md ("Drivers"): the last stdout line is one
// JSON object {"ok":..,"error":..,"detail":{..}}; `member` prints event lines before it.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class CompatDriver {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static Map<String, String> args = new HashMap<>();
    static long deadline;
    static volatile String step = "start";

    static class Failure extends Exception {
        Failure(String m) { super(m); }
    }

    // ---- the shared data set (README "Data set") ----
    static byte[] recKey(int i) {
        return i % 5 == 4 ? null : ("k" + i).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] recValue(int i) {
        if (i % 11 == 10 && i % 5 != 4) return null;
        byte[] tail = ("#" + i).getBytes(StandardCharsets.UTF_8);
        int n = i % 64;
        byte[] v = new byte[n + tail.length];
        for (int j = 0; j < n; j++) v[j] = (byte) ((i * 31 + j) % 256);
        System.arraycopy(tail, 0, v, n, tail.length);
        return v;
    }

    static List<Header> recHeaders(int i) {
        List<Header> h = new ArrayList<>();
        if (i % 3 == 2) return h;
        h.add(new RecordHeader("h", ("x" + i).getBytes(StandardCharsets.UTF_8)));
        h.add(new RecordHeader("h", "dup".getBytes(StandardCharsets.UTF_8)));
        h.add(new RecordHeader("empty", new byte[0]));
        return h;
    }

    static String hex(byte[] b) {
        if (b == null) return "null";
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < b.length && i < 20; i++) s.append(String.format("%02x", b[i]));
        return s.toString();
    }

    static String showHeaders(Iterable<Header> hs) {
        StringBuilder s = new StringBuilder("[");
        for (Header h : hs) s.append(h.key()).append("=").append(hex(h.value())).append(",");
        return s.append("]").toString();
    }

    static String compare(int i, ConsumerRecord<byte[], byte[]> r) {
        List<Header> got = new ArrayList<>();
        r.headers().forEach(got::add);
        List<Header> want = recHeaders(i);
        boolean same = Arrays.equals(r.key(), recKey(i)) && Arrays.equals(r.value(), recValue(i)) && got.size() == want.size();
        for (int j = 0; same && j < got.size(); j++) {
            same = got.get(j).key().equals(want.get(j).key()) && Arrays.equals(got.get(j).value(), want.get(j).value());
        }
        if (same) return null;
        return "record " + i + ": got key=" + hex(r.key()) + " value=" + hex(r.value()) + " headers=" + showHeaders(got)
            + ", want key=" + hex(recKey(i)) + " value=" + hex(recValue(i)) + " headers=" + showHeaders(want);
    }

    // ---- helpers ----
    static long left() { return deadline - System.currentTimeMillis(); }

    static String a(String k, String d) { return args.getOrDefault(k, d); }

    static int ai(String k, int d) { return Integer.parseInt(a(k, Integer.toString(d))); }

    static String js(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    // Client settings from --security FILE (librdkafka's names, README "Drivers"), in Java's terms.
    static Properties security = new Properties();

    static Properties base() {
        Properties p = new Properties();
        p.put("bootstrap.servers", a("bootstrap", ""));
        p.putAll(security);
        return p;
    }

    /** Reads --security FILE (key=value lines, librdkafka's property names) as Java client properties. */
    static Properties securityProperties(String file) throws Exception {
        Properties out = new Properties();
        if (file == null) return out;
        Map<String, String> in = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8)) {
            if (line.isBlank() || line.strip().startsWith("#")) continue;
            int eq = line.indexOf('=');
            if (eq < 0) throw new Failure("--security " + file + ": a line without '='");
            in.put(line.substring(0, eq).strip(), line.substring(eq + 1));
        }
        for (Map.Entry<String, String> e : in.entrySet()) {
            String k = e.getKey(), v = e.getValue();
            switch (k) {
                case "security.protocol": case "sasl.mechanism": case "ssl.key.password":
                    out.put(k, v);
                    break;
                case "ssl.endpoint.identification.algorithm":
                    out.put(k, v.equalsIgnoreCase("none") ? "" : v);
                    break;
                case "ssl.ca.location":
                    out.put("ssl.truststore.type", "PEM");
                    out.put("ssl.truststore.location", v);
                    break;
                case "ssl.certificate.location":
                    // Java's PEM key store: the chain and the PKCS#8 key as PEM text.
                    out.put("ssl.keystore.type", "PEM");
                    out.put("ssl.keystore.certificate.chain", Files.readString(Paths.get(v)));
                    break;
                case "ssl.key.location":
                    out.put("ssl.keystore.type", "PEM");
                    out.put("ssl.keystore.key", Files.readString(Paths.get(v)));
                    break;
                case "sasl.username": case "sasl.password":
                    break; // below, as sasl.jaas.config
                default:
                    throw new Failure("--security: no Java client equivalent for " + k);
            }
        }
        if (in.containsKey("sasl.username")) {
            String mech = in.getOrDefault("sasl.mechanism", "");
            String module = mech.startsWith("SCRAM-") ? "org.apache.kafka.common.security.scram.ScramLoginModule"
                : mech.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule" : null;
            if (module == null) throw new Failure("--security: sasl.username with sasl.mechanism " + mech);
            out.put("sasl.jaas.config", module + " required username=" + jaasQuote(in.get("sasl.username"))
                + " password=" + jaasQuote(in.getOrDefault("sasl.password", "")) + ";");
        }
        return out;
    }

    static String jaasQuote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static KafkaProducer<byte[], byte[]> producer(Properties extra) {
        Properties p = base();
        p.put("linger.ms", "5");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer(Properties extra) {
        Properties p = base();
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static List<ConsumerRecord<byte[], byte[]>> readPartition(String topic, int count, String isolation) throws Failure {
        step = "reading " + topic + "-0 (" + isolation + ")";
        Properties x = new Properties();
        x.put("isolation.level", isolation);
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(x)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while (out.size() < count) {
                if (left() <= 0) throw new Failure("read " + topic + "-0: " + out.size() + " of " + count + " records before the deadline");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
        }
        return out.size() > count ? out.subList(0, count) : out;
    }

    static List<RecordMetadata> sendAll(KafkaProducer<byte[], byte[]> p, List<ProducerRecord<byte[], byte[]>> recs, String what) throws Failure {
        List<Future<RecordMetadata>> fs = new ArrayList<>();
        for (ProducerRecord<byte[], byte[]> r : recs) fs.add(p.send(r));
        p.flush();
        List<RecordMetadata> out = new ArrayList<>();
        int failed = 0;
        String first = null;
        for (Future<RecordMetadata> f : fs) {
            try {
                out.add(f.get(Math.max(500, left()), TimeUnit.MILLISECONDS));
            } catch (Exception e) {
                failed++;
                if (first == null) first = e.getCause() != null ? e.getCause().toString() : e.toString();
                out.add(null);
            }
        }
        if (failed > 0) throw new Failure(what + ": " + failed + " of " + recs.size() + " deliveries failed, first: " + first);
        return out;
    }

    // ---- actions ----
    static String write() {
        StringBuilder detail = new StringBuilder("{");
        boolean ok = true;
        int n = ai("count", 100);
        for (String codec : a("codecs", String.join(",", CODECS)).split(",")) {
            String res = "ok";
            try {
                Properties x = new Properties();
                x.put("compression.type", codec);
                try (KafkaProducer<byte[], byte[]> p = producer(x)) {
                    List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
                    String t = a("topic", "") + "-" + codec;
                    for (int i = 0; i < n; i++) recs.add(new ProducerRecord<>(t, 0, recKey(i), recValue(i), recHeaders(i)));
                    List<RecordMetadata> md = sendAll(p, recs, codec);
                    for (int i = 1; i < md.size(); i++)
                        if (md.get(i).offset() != md.get(0).offset() + i) throw new Failure("offsets not contiguous");
                }
            } catch (Exception e) {
                res = e.toString();
                ok = false;
            }
            detail.append(detail.length() > 1 ? "," : "").append(js(codec)).append(":").append(js(res));
        }
        return result(ok, detail.append("}").toString());
    }

    static String verify() {
        StringBuilder detail = new StringBuilder("{");
        boolean ok = true;
        int n = ai("count", 100);
        for (String codec : a("codecs", String.join(",", CODECS)).split(",")) {
            String res = "ok";
            try {
                List<ConsumerRecord<byte[], byte[]>> got = readPartition(a("topic", "") + "-" + codec, n, "read_uncommitted");
                for (int i = 0; i < got.size(); i++) {
                    String why = compare(i, got.get(i));
                    if (why != null) throw new Failure(why);
                }
            } catch (Exception e) {
                res = e.toString();
                ok = false;
            }
            detail.append(detail.length() > 1 ? "," : "").append(js(codec)).append(":").append(js(res));
        }
        return result(ok, detail.append("}").toString());
    }

    static String result(boolean ok, String detail) {
        String err = null;
        if (!ok) {
            err = detail.replaceAll("\"[a-z0-9]+\":\"ok\",?", "");
        }
        return "{\"ok\":" + ok + ",\"error\":" + js(err) + ",\"detail\":" + detail + "}";
    }

    static String keyed() throws Failure {
        // The Java client's default (no partitioner.class) is murmur2 of the key: that is the reference.
        int n = ai("count", 64);
        try (KafkaProducer<byte[], byte[]> p = producer(new Properties())) {
            List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
            for (int i = 0; i < n; i++)
                recs.add(new ProducerRecord<>(a("topic", ""), ("k" + i).getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8)));
            List<RecordMetadata> md = sendAll(p, recs, "keyed");
            StringBuilder s = new StringBuilder("{\"partitions\":[");
            for (int i = 0; i < md.size(); i++) s.append(i > 0 ? "," : "").append(md.get(i).partition());
            return "{\"ok\":true,\"error\":null,\"detail\":" + s.append("]}").toString() + "}";
        }
    }

    static String fill() throws Failure {
        int n = ai("count", 100), parts = ai("partitions", 4);
        try (KafkaProducer<byte[], byte[]> p = producer(new Properties())) {
            List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
            for (int i = 0; i < n; i++)
                recs.add(new ProducerRecord<>(a("topic", ""), i % parts, ("k" + i).getBytes(StandardCharsets.UTF_8), ("g" + i).getBytes(StandardCharsets.UTF_8)));
            sendAll(p, recs, "fill");
        }
        return "{\"ok\":true,\"error\":null,\"detail\":{}}";
    }

    static String member() throws Failure {
        Properties x = new Properties();
        x.put("group.id", a("group", ""));
        if (a("protocol", "classic").equals("consumer")) {
            // KIP-848: the broker assigns and decides sessions and heartbeats.
            x.put("group.protocol", "consumer");
        } else {
            x.put("partition.assignment.strategy", RoundRobinAssignor.class.getName());
            x.put("heartbeat.interval.ms", "500");
            x.put("session.timeout.ms", "10000");
        }
        String stop = a("stop", "");
        try (KafkaConsumer<byte[], byte[]> c = consumer(x)) {
            c.subscribe(List.of(a("topic", "")));
            String last = null;
            while (!Files.exists(Paths.get(stop))) {
                if (left() <= 0) throw new Failure("member: no stop signal before the deadline");
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(200));
                List<Integer> now = new ArrayList<>();
                for (TopicPartition tp : c.assignment()) now.add(tp.partition());
                Collections.sort(now);
                String s = now.toString();
                if (!s.equals(last)) {
                    emit("{\"event\":\"assignment\",\"partitions\":" + s + "}");
                    last = s;
                }
                for (ConsumerRecord<byte[], byte[]> r : recs)
                    emit("{\"event\":\"record\",\"partition\":" + r.partition() + ",\"offset\":" + r.offset() + "}");
            }
        }
        return "{\"ok\":true,\"error\":null,\"detail\":{}}";
    }

    static String idempotence() throws Failure {
        int n = ai("count", 1000);
        Properties x = new Properties();
        x.put("enable.idempotence", "true");
        x.put("acks", "all");
        String t = a("topic", "");
        try (KafkaProducer<byte[], byte[]> p = producer(x)) {
            List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
            for (int i = 0; i < n; i++) recs.add(new ProducerRecord<>(t, 0, null, ("i" + i).getBytes(StandardCharsets.UTF_8)));
            List<RecordMetadata> md = sendAll(p, recs, "idempotent produce");
            for (int i = 1; i < n; i++)
                if (md.get(i).offset() != md.get(0).offset() + i) throw new Failure("delivery offsets not contiguous in send order at " + i);
        }
        List<ConsumerRecord<byte[], byte[]>> got = readPartition(t, n, "read_uncommitted");
        for (int i = 0; i < n; i++) {
            String v = new String(got.get(i).value(), StandardCharsets.UTF_8);
            if (!v.equals("i" + i)) throw new Failure("read back: record " + i + " is " + v + ", want i" + i);
        }
        return "{\"ok\":true,\"error\":null,\"detail\":{}}";
    }

    static String transactions() throws Failure {
        String t = a("topic", "");
        int n = 10;
        Properties x = new Properties();
        x.put("transactional.id", "compat-" + t);
        x.put("max.block.ms", Long.toString(Math.max(1000, Math.min(30000, left() - 5000))));
        try (KafkaProducer<byte[], byte[]> p = producer(x)) {
            step = "init_transactions";
            p.initTransactions();
            for (String[] phase : new String[][] {{"c1", "commit"}, {"ab", "abort"}, {"c2", "commit"}}) {
                step = "begin_transaction (" + phase[0] + ")";
                p.beginTransaction();
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(t, 0, null, (phase[0] + "-" + i).getBytes(StandardCharsets.UTF_8))));
                if (phase[1].equals("commit")) {
                    step = "commit_transaction (" + phase[0] + ")";
                    p.commitTransaction();
                } else {
                    step = "abort_transaction (" + phase[0] + ")";
                    p.flush();
                    p.abortTransaction();
                }
            }
        } catch (Exception e) {
            throw new Failure(step + ": " + e);
        }
        List<String> want = new ArrayList<>();
        for (int i = 0; i < n; i++) want.add("c1-" + i);
        for (int i = 0; i < n; i++) want.add("c2-" + i);
        List<String> got = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : readPartition(t, 2 * n, "read_committed")) got.add(new String(r.value(), StandardCharsets.UTF_8));
        if (!got.equals(want)) throw new Failure("read_committed read " + got + ", want c1-0..9 then c2-0..9");
        List<String> raw = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : readPartition(t, 3 * n, "read_uncommitted")) raw.add(new String(r.value(), StandardCharsets.UTF_8));
        List<String> wantRaw = new ArrayList<>(want.subList(0, n));
        for (int i = 0; i < n; i++) wantRaw.add("ab-" + i);
        wantRaw.addAll(want.subList(n, 2 * n));
        if (!raw.equals(wantRaw)) throw new Failure("read_uncommitted read " + raw + ", want c1, ab (aborted), c2");
        return "{\"ok\":true,\"error\":null,\"detail\":{}}";
    }

    static String admin() throws Exception {
        String t = a("topic", "");
        try (Admin ad = Admin.create(base())) {
            long to = Math.max(1000, left());
            step = "create_topics";
            ad.createTopics(List.of(new NewTopic(t, 3, (short) ai("replication", 1)))).all().get(to, TimeUnit.MILLISECONDS);
            step = "list_topics";
            while (!ad.listTopics().names().get(to, TimeUnit.MILLISECONDS).contains(t)) {
                if (left() <= 0) throw new Failure("created topic not listed before the deadline");
                Thread.sleep(100);
            }
            step = "describe_topics";
            TopicDescription d = ad.describeTopics(List.of(t)).allTopicNames().get(to, TimeUnit.MILLISECONDS).get(t);
            if (d.partitions().size() != 3) throw new Failure("describe_topics: " + d.partitions().size() + " partitions, want 3");
            step = "create_topics again";
            try {
                ad.createTopics(List.of(new NewTopic(t, 3, (short) ai("replication", 1)))).all().get(to, TimeUnit.MILLISECONDS);
                throw new Failure("second create_topics succeeded (want TOPIC_ALREADY_EXISTS)");
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw new Failure("second create_topics: " + e.getCause() + " (want TOPIC_ALREADY_EXISTS)");
            }
            step = "delete_topics";
            ad.deleteTopics(List.of(t)).all().get(to, TimeUnit.MILLISECONDS);
            while (ad.listTopics().names().get(to, TimeUnit.MILLISECONDS).contains(t)) {
                if (left() <= 0) throw new Failure("deleted topic still listed at the deadline");
                Thread.sleep(100);
            }
        }
        return "{\"ok\":true,\"error\":null,\"detail\":{}}";
    }

    // ---- the quotas scenario (README "Scenarios": quotas) ----

    /** quota_set: producer_byte_rate for client id --producer-id and consumer_byte_rate for
     * --consumer-id (both --rate B/s), waits until DescribeClientQuotas shows them; creates the
     * cell's 1-partition --topic; reports the broker's quota.window.num. The matrix's quota admin
     * (the reference client's Admin against either broker). */
    static String quotaSet() throws Exception {
        double rate = Double.parseDouble(a("rate", "262144"));
        Map<String, String> want = new LinkedHashMap<>();
        want.put(a("producer-id", ""), "producer_byte_rate");
        want.put(a("consumer-id", ""), "consumer_byte_rate");
        try (Admin ad = Admin.create(base())) {
            long to = Math.max(1000, left());
            step = "alter_client_quotas";
            List<ClientQuotaAlteration> alts = new ArrayList<>();
            for (Map.Entry<String, String> e : want.entrySet())
                alts.add(new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, e.getKey())),
                    List.of(new ClientQuotaAlteration.Op(e.getValue(), rate))));
            ad.alterClientQuotas(alts).all().get(to, TimeUnit.MILLISECONDS);
            step = "describe_client_quotas";
            for (Map.Entry<String, String> e : want.entrySet()) {
                ClientQuotaFilter f = ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, e.getKey())));
                while (true) {
                    Map<ClientQuotaEntity, Map<String, Double>> got = ad.describeClientQuotas(f).entities().get(to, TimeUnit.MILLISECONDS);
                    Double v = got.values().stream().map(m -> m.get(e.getValue())).filter(Objects::nonNull).findFirst().orElse(null);
                    if (v != null && v == rate) break;
                    if (left() <= 0) throw new Failure("client-id " + e.getKey() + ": " + e.getValue() + " not described before the deadline: " + got);
                    Thread.sleep(100);
                }
            }
            step = "create_topics";
            ad.createTopics(List.of(new NewTopic(a("topic", ""), 1, (short) ai("replication", 1)))).all().get(to, TimeUnit.MILLISECONDS);
            step = "describe_configs";
            String node = ad.describeCluster().nodes().get(to, TimeUnit.MILLISECONDS).iterator().next().idString();
            ConfigResource br = new ConfigResource(ConfigResource.Type.BROKER, node);
            Config c = ad.describeConfigs(List.of(br)).all().get(to, TimeUnit.MILLISECONDS).get(br);
            ConfigEntry w = c.get("quota.window.num");
            String windows = w == null ? null : w.value();
            return "{\"ok\":true,\"error\":null,\"detail\":{\"quota.window.num\":" + js(windows) + "}}";
        }
    }

    /** quota_fill: the consumed topic of the quotas scenario: a 1-partition --topic of --count
     * records, each its own batch (one producer, linger 0, batch.size below two records, no
     * compression, null key, no headers, --size-byte values), so every batch has the same size;
     * reports the partition's size on its leader's disk (DescribeLogDirs), which the runner divides by the count. */
    static String quotaFill() throws Exception {
        int n = ai("count", 1000), size = ai("size", 8000);
        String t = a("topic", "");
        try (Admin ad = Admin.create(base())) {
            long to = Math.max(1000, left());
            step = "create_topics";
            ad.createTopics(List.of(new NewTopic(t, 1, (short) ai("replication", 1)))).all().get(to, TimeUnit.MILLISECONDS);
            Properties x = new Properties();
            x.put("linger.ms", "0");
            x.put("batch.size", Integer.toString(size + 200));
            x.put("compression.type", "none");
            x.put("acks", "all");
            step = "producing";
            try (KafkaProducer<byte[], byte[]> p = producer(x)) {
                List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
                byte[] v = new byte[size];
                Arrays.fill(v, (byte) 'c');
                for (int i = 0; i < n; i++) recs.add(new ProducerRecord<>(t, 0, null, v));
                sendAll(p, recs, "fill");
            }
            step = "describe_log_dirs";
            // The partition's leader (on a cluster every replica holds the same batches once they
            // are replicated; the leader has them all when acks=all returned).
            String node = ad.describeTopics(List.of(t)).allTopicNames().get(to, TimeUnit.MILLISECONDS).get(t)
                .partitions().get(0).leader().idString();
            long bytes = -1;
            TopicPartition tp = new TopicPartition(t, 0);
            for (LogDirDescription d : ad.describeLogDirs(List.of(Integer.parseInt(node))).allDescriptions().get(to, TimeUnit.MILLISECONDS)
                     .get(Integer.parseInt(node)).values()) {
                ReplicaInfo r = d.replicaInfos().get(tp);
                if (r != null) bytes = r.size();
            }
            return "{\"ok\":true,\"error\":null,\"detail\":{\"log_bytes\":" + bytes + ",\"records\":" + n + "}}";
        }
    }

    /** The largest value of the client's metric `name` (any group); NaN when it has none. */
    static double metricMax(Map<MetricName, ? extends Metric> metrics, String name) {
        double best = Double.NaN;
        for (Map.Entry<MetricName, ? extends Metric> e : metrics.entrySet()) {
            if (!e.getKey().name().equals(name)) continue;
            Object v = e.getValue().metricValue();
            if (v instanceof Double && !((Double) v).isNaN() && !((Double) v).isInfinite())
                best = Double.isNaN(best) ? (Double) v : Math.max(best, (Double) v);
        }
        return best;
    }

    static String throttleJson(double max, String metric) {
        boolean seen = !Double.isNaN(max) && max > 0;
        return "\"throttled\":" + seen + ",\"throttle_report\":" + js(metric + " = " + (Double.isNaN(max) ? "none" : String.format("%.0f ms", max)));
    }

    /** quota_produce: --size-byte values to partition 0 of --topic as fast as the client is let,
     * for --seconds; the payload acknowledged in [--warmup, --seconds). */
    static String quotaProduce() throws Exception {
        int size = ai("size", 8192);
        long run = (long) (Double.parseDouble(a("seconds", "23")) * 1000), warm = (long) (Double.parseDouble(a("warmup", "3")) * 1000);
        Properties x = new Properties();
        x.put("client.id", a("client-id", ""));
        x.put("batch.size", "32768");
        x.put("linger.ms", "0");
        x.put("buffer.memory", "1048576");
        x.put("max.block.ms", "2000");
        x.put("metrics.sample.window.ms", "60000");
        String t = a("topic", "");
        byte[] v = new byte[size];
        Arrays.fill(v, (byte) 'q');
        java.util.concurrent.atomic.AtomicLong acked = new java.util.concurrent.atomic.AtomicLong(), recs = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicReference<String> failed = new java.util.concurrent.atomic.AtomicReference<>();
        KafkaProducer<byte[], byte[]> p = producer(x);
        long t0 = System.currentTimeMillis();
        step = "producing";
        while (System.currentTimeMillis() - t0 < run) {
            try {
                p.send(new ProducerRecord<>(t, 0, null, v), (md, e) -> {
                    long at = System.currentTimeMillis() - t0;
                    if (e != null) failed.compareAndSet(null, e.toString());
                    else if (at >= warm && at < run) { acked.addAndGet(size); recs.incrementAndGet(); }
                });
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                // no buffer room within max.block.ms: try again until the end of the run
            }
        }
        if (failed.get() != null) throw new Failure("a delivery failed: " + failed.get());
        double max = metricMax(p.metrics(), "produce-throttle-time-max");
        return "{\"ok\":true,\"error\":null,\"detail\":{\"bytes\":" + acked.get() + ",\"records\":" + recs.get() + ",\"window\":"
            + (run - warm) / 1000.0 + "," + throttleJson(max, "produce-throttle-time-max") + "}}";
    }

    /** quota_consume: partition 0 of --topic from offset 0 with both fetch limits at --fetch-bytes;
     * from the first record on, the value bytes received in [--warmup, --seconds). */
    static String quotaConsume() throws Exception {
        long run = (long) (Double.parseDouble(a("seconds", "23")) * 1000), warm = (long) (Double.parseDouble(a("warmup", "3")) * 1000);
        long count = Long.parseLong(a("count", Long.toString(Long.MAX_VALUE)));
        Properties x = new Properties();
        x.put("client.id", a("client-id", ""));
        x.put("max.partition.fetch.bytes", a("fetch-bytes", ""));
        x.put("fetch.max.bytes", a("fetch-bytes", ""));
        x.put("metrics.sample.window.ms", "60000");
        long bytes = 0, recs = 0, total = 0, t0 = -1;
        boolean exhausted = false;
        step = "consuming";
        try (KafkaConsumer<byte[], byte[]> c = consumer(x)) {
            TopicPartition tp = new TopicPartition(a("topic", ""), 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while (t0 < 0 || System.currentTimeMillis() - t0 < run) {
                if (left() <= 0) throw new Failure(total + " records read before the deadline");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(50))) {
                    long now = System.currentTimeMillis();
                    if (t0 < 0) t0 = now;
                    total++;
                    if (now - t0 >= warm && now - t0 < run) { bytes += r.value() == null ? 0 : r.value().length; recs++; }
                }
                if (total >= count && System.currentTimeMillis() - t0 < run) { exhausted = true; break; }
            }
            double max = metricMax(c.metrics(), "fetch-throttle-time-max");
            return "{\"ok\":true,\"error\":null,\"detail\":{\"bytes\":" + bytes + ",\"records\":" + recs + ",\"window\":"
                + (run - warm) / 1000.0 + ",\"exhausted\":" + exhausted + "," + throttleJson(max, "fetch-throttle-time-max") + "}}";
        }
    }

    public static void main(String[] argv) {
        String action = argv.length > 0 ? argv[0] : "";
        for (int i = 1; i + 1 < argv.length; i += 2) args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        double timeout = Double.parseDouble(a("timeout", "60"));
        deadline = System.currentTimeMillis() + (long) (timeout * 1000);
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep((long) (timeout * 1000) + 5000);
            } catch (InterruptedException e) {
                return;
            }
            emit("{\"ok\":false,\"error\":" + js("timeout (driver deadline " + (long) timeout + " s) during: " + step) + ",\"detail\":{}}");
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        String out;
        try {
            security = securityProperties(args.get("security"));
            switch (action) {
                case "write": out = write(); break;
                case "verify": out = verify(); break;
                case "keyed": out = keyed(); break;
                case "fill": out = fill(); break;
                case "member": out = member(); break;
                case "idempotence": out = idempotence(); break;
                case "transactions": out = transactions(); break;
                case "admin": out = admin(); break;
                case "quota_set": out = quotaSet(); break;
                case "quota_fill": out = quotaFill(); break;
                case "quota_produce": out = quotaProduce(); break;
                case "quota_consume": out = quotaConsume(); break;
                case "info": out = "{\"ok\":true,\"error\":null,\"detail\":{\"version\":" + js("Java kafka-clients " + org.apache.kafka.common.utils.internals.AppInfoParser.getVersion() + " (Java " + System.getProperty("java.version") + ")") + "}}"; break;
                default: out = "{\"ok\":false,\"error\":" + js("unknown action " + action) + ",\"detail\":{}}";
            }
        } catch (Failure e) {
            out = "{\"ok\":false,\"error\":" + js(e.getMessage()) + ",\"detail\":{}}";
        } catch (Exception e) {
            e.printStackTrace();
            out = "{\"ok\":false,\"error\":" + js(step + ": " + e) + ",\"detail\":{}}";
        }
        emit(out);
        Runtime.getRuntime().halt(0);
    }
}
