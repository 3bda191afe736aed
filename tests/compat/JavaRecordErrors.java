// The Java client's per-record delivery results for batches with invalid records (issue 26):
// `java -cp $(kafka.sh classpath) JavaRecordErrors.java BOOTSTRAP` creates two one-partition
// topics, sends each case as one batch, and prints one line per case:
//   keyless different INVALID_RECORD different INVALID_RECORD different
//   timestamps different INVALID_TIMESTAMP different
// ("different": refused because another record of the batch was invalid). python/tests/
// test_record_errors.py compares these lines with librdkafka's and Odradek's.

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaRecordErrors {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        long now = System.currentTimeMillis();
        long hour = 3_600_000L;
        String keyless = "java-keyless-" + UUID.randomUUID();
        String timestamps = "java-timestamps-" + UUID.randomUUID();
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(
                new NewTopic(keyless, 1, (short) 1).configs(Map.of("cleanup.policy", "compact")),
                new NewTopic(timestamps, 1, (short) 1)
                    .configs(Map.of("message.timestamp.before.max.ms", "3600000"))))
                .all().get();
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("linger.ms", "200");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            // Metadata first, so every record joins the same batch.
            producer.partitionsFor(keyless);
            producer.partitionsFor(timestamps);
            byte[][] keys = {"a".getBytes(), null, "b".getBytes(), null, "c".getBytes()};
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (byte[] key : keys) {
                sent.add(producer.send(new ProducerRecord<>(keyless, 0, now, key, "value".getBytes())));
            }
            System.out.println("keyless " + outcomes(sent));
            long[] times = {now, now - 2 * hour, now};
            sent = new ArrayList<>();
            for (long ts : times) {
                sent.add(producer.send(new ProducerRecord<>(timestamps, 0, ts, null, "value".getBytes())));
            }
            System.out.println("timestamps " + outcomes(sent));
        }
    }

    static String outcomes(List<Future<RecordMetadata>> sent) throws InterruptedException {
        StringBuilder out = new StringBuilder();
        for (Future<RecordMetadata> f : sent) {
            String name;
            try {
                f.get();
                name = "ok";
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof InvalidTimestampException) {
                    name = "INVALID_TIMESTAMP";
                } else if (cause instanceof InvalidRecordException) {
                    name = "INVALID_RECORD";
                } else if (String.valueOf(cause.getMessage()).contains("part of a batch")) {
                    name = "different";
                } else {
                    name = cause.getClass().getSimpleName();
                }
            }
            out.append(out.length() == 0 ? "" : " ").append(name);
        }
        return out.toString();
    }
}
