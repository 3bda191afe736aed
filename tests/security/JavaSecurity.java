// The Java client (kafka-clients 4.4) against a secured broker: SSL, mTLS (PEM key stores),
// SASL_SSL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (the client's unsecured
// JWT), each a produce + group consume round trip, and a wrong password refused with
// SaslAuthenticationException. Run as a single-file program with the Kafka jars:
//   java -cp "$(tests/compat/kafka.sh classpath)" tests/security/JavaSecurity.java LISTENERS_ENV PKIDIR
// LISTENERS_ENV holds NAME=HOST:PORT lines (SSL, MTLS, SASL_SSL). Prints one line per case and
// "OK" at the end; exits 1 on the first failure.

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaSecurity {
    static Map<String, String> listeners = new HashMap<>();
    static String pki;

    static Properties base(String listener, String mechanism, String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", listeners.get(listener));
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", pki + "/ca.pem");
        if (listener.equals("SSL") || listener.equals("MTLS")) {
            p.put("security.protocol", "SSL");
        }
        if (listener.equals("MTLS")) {
            p.put("ssl.keystore.type", "PEM");
            p.put("ssl.keystore.location", pki + "/client-keystore.pem");
        }
        if (listener.equals("SASL_SSL")) {
            p.put("security.protocol", "SASL_SSL");
            p.put("sasl.mechanism", mechanism);
            String jaas;
            if (mechanism.equals("PLAIN")) {
                jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user + "\" password=\"" + password + "\";";
            } else if (mechanism.startsWith("SCRAM")) {
                jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user + "\" password=\"" + password + "\";";
            } else {
                jaas = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"" + user + "\";";
            }
            p.put("sasl.jaas.config", jaas);
        }
        p.put("request.timeout.ms", "20000");
        p.put("default.api.timeout.ms", "30000");
        return p;
    }

    static void roundTrip(String what, Properties conf) throws Exception {
        String topic = "java-sec-" + UUID.randomUUID().toString().substring(0, 8);
        Properties pp = (Properties) conf.clone();
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        pp.put("max.block.ms", "30000");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
            }
        }
        Properties cp = (Properties) conf.clone();
        cp.put("group.id", "g-" + topic);
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.add(r.value());
                }
            }
            c.commitSync();
        }
        if (got.size() != 5) {
            throw new AssertionError(what + ": consumed " + got);
        }
        System.out.println("ok " + what);
    }

    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            String[] kv = line.trim().split("=", 2);
            if (kv.length == 2) {
                listeners.put(kv[0], kv[1]);
            }
        }
        pki = args[1];
        try {
            roundTrip("SSL", base("SSL", null, null, null));
            roundTrip("MTLS", base("MTLS", null, null, null));
            for (String m : List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")) {
                roundTrip("SASL_SSL " + m, base("SASL_SSL", m, "alice", "alice-secret"));
            }
            Properties bad = base("SASL_SSL", "SCRAM-SHA-512", "alice", "wrong-secret-java");
            bad.put("key.serializer", StringSerializer.class.getName());
            bad.put("value.serializer", StringSerializer.class.getName());
            bad.put("max.block.ms", "15000");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(bad)) {
                p.send(new ProducerRecord<>("java-sec-denied", "v")).get();
                throw new AssertionError("wrong password accepted");
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof SaslAuthenticationException)) {
                    throw new AssertionError("wrong password: " + e.getCause());
                }
                System.out.println("refused wrong password: " + e.getCause().getMessage());
            } catch (SaslAuthenticationException e) {
                System.out.println("refused wrong password: " + e.getMessage());
            }
            System.out.println("OK");
        } catch (Throwable t) {
            t.printStackTrace();
            System.out.println("FAIL " + t);
            System.exit(1);
        }
    }
}
