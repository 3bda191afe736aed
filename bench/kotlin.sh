#!/usr/bin/env bash
# Kotlin package throughput next to the Java client, in one JVM, against one Apache Kafka 4.x
# (tests/compat/kafka.sh), interleaved: kotlin/src/test/kotlin/dev/odradek/kafka/bench/
# Throughput.kt. The native library is built in release mode.
#
#   bench/kotlin.sh [RECORDS] [VALUE_BYTES] [ROUNDS]     (default 500000 100 3)
#
# BENCH_BOOTSTRAP=host:port uses a running broker instead of starting Kafka.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
records=${1:-500000}
size=${2:-100}
rounds=${3:-3}

kdir=""
trap '[[ -n "$kdir" ]] && { tests/compat/kafka.sh stop "$kdir" >/dev/null 2>&1 || true; rm -rf "$kdir"; }' EXIT
bootstrap=${BENCH_BOOTSTRAP:-}
if [[ -z "$bootstrap" ]]; then
  kdir=$(mktemp -d)
  bootstrap=$(tests/compat/kafka.sh start "$kdir")
fi

cd kotlin
mvn -q -B -ntp -Dodradek.cargo.profile=release -DskipTests test-compile
mvn -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath >/dev/null
cp="target/classes:target/test-classes:$(cat target/bench.classpath)"
echo "bench/kotlin.sh: broker $bootstrap (Apache Kafka 4.x), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
java -Xmx1g -cp "$cp" dev.odradek.kafka.bench.Throughput "$bootstrap" "$records" "$size" "$rounds"
