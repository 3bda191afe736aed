"""Java programs of the benchmarks (bench/*.java) compiled against the Kafka client jars of
tests/compat/kafka.sh, shared by bench/failover.py and bench/cluster_produce.py."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KAFKA_SH = os.path.join(ROOT, "tests", "compat", "kafka.sh")
TOOLS_LOG4J = os.path.join(ROOT, "tests", "compat", ".cache", "kafka-tools-log4j2.properties")


def compile_main(workdir, main_class, jvm_args):
    """Compiles bench/MAIN_CLASS.java into WORKDIR/MAIN_CLASS; returns the command prefix that
    runs it (java, JVM_ARGS, the Kafka tools' log4j settings, the classpath, the class)."""
    classpath = subprocess.run([KAFKA_SH, "classpath"], check=True, stdout=subprocess.PIPE,
                               text=True).stdout.strip()
    out = os.path.join(workdir, main_class)
    os.makedirs(out, exist_ok=True)
    subprocess.run(["javac", "-nowarn", "-d", out, "-cp", classpath,
                    os.path.join(ROOT, "bench", main_class + ".java")], check=True)
    return ["java", *jvm_args, "-Dlog4j2.configurationFile=" + TOOLS_LOG4J,
            "-cp", classpath + ":" + out, main_class]
