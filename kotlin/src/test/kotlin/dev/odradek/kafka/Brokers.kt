package dev.odradek.kafka

import java.io.File
import java.nio.file.Files
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger

/**
 * A broker the suite runs against: [bootstrap] and how to get one where a missing topic stays
 * missing ([noAutoCreate]: a broker address and client settings).
 */
class Broker(
    val name: String,
    val bootstrap: String,
    private val noAutoCreateFactory: () -> Pair<String, Map<String, Any>>,
) {
    /** (bootstrap, client config) under which topics are not auto-created. */
    val noAutoCreate: Pair<String, Map<String, Any>> by lazy(noAutoCreateFactory)

    /** Whether this is Apache Kafka (some answers differ in detail). */
    val isKafka get() = name == "kafka"

    override fun toString() = name
}

/**
 * The two brokers every test class is parameterised over, started once per test JVM and
 * stopped when it exits: our `odradek-broker` (built by Maven before the tests;
 * `ODRADEK_BROKER_BIN` overrides the binary), on an ephemeral port with a fresh data
 * directory, and Apache Kafka 4.x, single-node KRaft, started with `tests/compat/kafka.sh`
 * (or the one at `ODRADEK_TEST_KAFKA=host:port`, started by someone else). Both have
 * auto-creation on and 4 partitions per new topic.
 */
object Brokers {
    private val root = File(System.getProperty("odradek.root") ?: "..").canonicalFile
    private val work = Files.createTempDirectory("odradek-kotlin-tests").toFile()
    private val names = AtomicInteger()

    /** Our broker. */
    val ours: Broker by lazy {
        Broker("odradek", startOurs(emptyMap())) {
            startOurs(mapOf("auto.create.topics.enable" to "false")) to emptyMap()
        }
    }

    /** Apache Kafka. */
    val kafka: Broker by lazy {
        val addr = System.getenv("ODRADEK_TEST_KAFKA")?.takeIf { it.isNotBlank() } ?: startKafka()
        Broker("kafka", addr) { addr to mapOf("allow.auto.create.topics" to false) }
    }

    /** Both, for `@MethodSource`. */
    @JvmStatic
    fun both(): List<Broker> = listOf(ours, kafka)

    /** A topic name no other test uses. */
    fun topicName(prefix: String) = "kt-$prefix-${ProcessHandle.current().pid()}-${names.incrementAndGet()}"

    private fun startOurs(overrides: Map<String, String>): String {
        val bin = System.getenv("ODRADEK_BROKER_BIN")?.let(::File) ?: File(root, "target/debug/odradek-broker")
        check(bin.canExists()) { "broker binary $bin not found: cargo build -p odradek-broker" }
        val dir = Files.createTempDirectory(work.toPath(), "broker").toFile()
        val cmd = mutableListOf(
            bin.path,
            "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", "log.dirs=${File(dir, "data")}",
            "--override", "num.partitions=4",
        )
        overrides.forEach { (k, v) -> cmd += listOf("--override", "$k=$v") }
        val proc = ProcessBuilder(cmd)
            .redirectError(File(dir, "broker.stderr.log"))
            .redirectInput(ProcessBuilder.Redirect.PIPE)
            .apply { environment()["NO_COLOR"] = "1" }
            .start()
        Runtime.getRuntime().addShutdownHook(Thread { proc.destroy(); proc.waitFor(20, TimeUnit.SECONDS); proc.destroyForcibly() })
        val out = proc.inputStream.bufferedReader()
        val line = out.readLine() ?: error("odradek-broker exited: see ${File(dir, "broker.stderr.log")}")
        val m = Regex("""^odradek-broker listening on (\S+):(\d+)\s*$""").find(line)
            ?: error("unexpected first line from odradek-broker: $line")
        // Keep reading so the broker never blocks on a full pipe.
        Thread { out.useLines { it.forEach { } } }.apply { isDaemon = true }.start()
        return "${m.groupValues[1]}:${m.groupValues[2]}"
    }

    private fun File.canExists() = isFile && canExecute()

    private fun startKafka(): String {
        val script = File(root, "tests/compat/kafka.sh").path
        val dir = Files.createTempDirectory(work.toPath(), "kafka").toFile()
        val proc = ProcessBuilder("bash", script, "start", dir.path)
            .redirectError(File(work, "kafka-start.log"))
            .start()
        val addr = proc.inputStream.bufferedReader().readText().trim()
        check(proc.waitFor() == 0 && addr.isNotEmpty()) {
            "kafka.sh start failed: ${File(work, "kafka-start.log").readText().takeLast(3000)}"
        }
        Runtime.getRuntime().addShutdownHook(
            Thread {
                ProcessBuilder("bash", script, "stop", dir.path).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor(60, TimeUnit.SECONDS)
            },
        )
        return addr
    }
}
