// Readiness probe for the Kafka peer started by kafka.sh.
//
// Usage: java -cp 'kafka-libs/*:probe-classes' ReadyProbe BOOTSTRAP TIMEOUT_MS [EXPECTED_NODE_ID]
//
// Polls the broker with the Java AdminClient until DescribeCluster answers with the expected
// broker among the live (registered, unfenced) nodes and a controller, or the deadline passes.
// Exit 0 when ready, 1 on timeout. Diagnostics go to stderr; stdout stays empty.

import java.util.Collection;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.common.Node;

public final class ReadyProbe {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: ReadyProbe BOOTSTRAP TIMEOUT_MS [EXPECTED_NODE_ID]");
            System.exit(2);
        }
        String bootstrap = args[0];
        long timeoutMs = Long.parseLong(args[1]);
        int expectedNode = args.length > 2 ? Integer.parseInt(args[2]) : -1;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);

        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "odradek-ready-probe");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "100");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        props.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "100");

        String last = "no answer yet";
        try (Admin admin = Admin.create(props)) {
            while (System.nanoTime() < deadline) {
                try {
                    DescribeClusterResult r =
                        admin.describeCluster(new DescribeClusterOptions().timeoutMs(3000));
                    Collection<Node> nodes = r.nodes().get(4, TimeUnit.SECONDS);
                    Node controller = r.controller().get(4, TimeUnit.SECONDS);
                    String clusterId = r.clusterId().get(4, TimeUnit.SECONDS);
                    boolean haveNode = expectedNode < 0
                        ? !nodes.isEmpty()
                        : nodes.stream().anyMatch(n -> n.id() == expectedNode);
                    if (haveNode && controller != null && !controller.isEmpty()) {
                        System.err.println("ready-probe: cluster " + clusterId + ", nodes " + nodes);
                        return;
                    }
                    last = "nodes " + nodes + ", controller " + controller;
                } catch (Exception e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    last = cause.getClass().getSimpleName() + ": " + cause.getMessage();
                }
                Thread.sleep(200);
            }
        }
        System.err.println("ready-probe: not ready after " + timeoutMs + " ms: " + last);
        System.exit(1);
    }
}
