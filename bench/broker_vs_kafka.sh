#!/usr/bin/env bash
# odradek-broker vs Apache Kafka 4.4.0 on this machine, in one interleaved run (~15-20 min on
# 2 cores): startup time, producer and consumer throughput, produce latency, resident memory and
# broker CPU per million messages (bench/broker_vs_kafka.py, driven by Kafka's own tools); then
# the brokers as the bottleneck, driven by odradek's producer over several connections, with
# the default flush and an fsync per append, against dd's bandwidth (bench/broker_bound.py).
#
#   bench/broker_vs_kafka.sh            build (release), run, write
#                                       bench/results/broker_vs_kafka-<date>.json,
#                                       bench/results/broker_vs_kafka-<date>.md (tables) and
#                                       bench/results/broker_vs_kafka.svg (chart) and
#                                       bench/results/broker_bound-<date>.json
#
# Environment (all optional):
#   ODRADEK_BROKER_BIN     use this broker binary instead of building target/release/odradek-broker
#   ODRADEK_BENCH_ARGS     extra arguments for broker_vs_kafka.py (e.g. "--repeats 5")
#   ODRADEK_BOUND_ARGS     extra arguments for broker_bound.py, the second phase (e.g.
#                          "--producers 4 --repeats 3"); ODRADEK_BENCH_SKIP_BOUND=1 skips it
#   ODRADEK_BENCH_WORKDIR  where the brokers keep their data (default: a fresh dir in $TMPDIR; about
#                          2 GB per broker with the default record counts; removed afterwards
#                          unless ODRADEK_BENCH_KEEP=1)
#   ODRADEK_BENCH_OUT_DIR  where the JSON, markdown and SVG go (default bench/results)
#   ODRADEK_KAFKA_HEAP     Kafka broker heap (default "-Xmx512m -Xms128m", as tests/compat/kafka.sh)
#   JAVA_HOME              Java 17+ (default: java on PATH)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BENCH="$ROOT/bench"
KAFKA_SH="$ROOT/tests/compat/kafka.sh"
log() { printf 'broker_vs_kafka.sh: %s\n' "$*" >&2; }

JAVA=java; JAVAC=javac
if [[ -n "${JAVA_HOME:-}" ]]; then JAVA="$JAVA_HOME/bin/java"; JAVAC="$JAVA_HOME/bin/javac"; fi

# 1. The broker, built once in release.
if [[ -n "${ODRADEK_BROKER_BIN:-}" ]]; then
  BIN="$ODRADEK_BROKER_BIN"
else
  log "cargo build --release -p odradek-broker"
  (cd "$ROOT" && cargo build --release -p odradek-broker) >&2
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/odradek-broker"
fi

# 2. Kafka jars (also ProducerPerformance) and the bench client compiled against them.
"$KAFKA_SH" install
LIBS="$("$KAFKA_SH" classpath)"
TOOLS_LOG4J="$ROOT/tests/compat/.cache/kafka-tools-log4j2.properties"
CLASSES="$BENCH/.cache/classes"
if [[ ! -f "$CLASSES/BenchClient.class" || "$BENCH/BenchClient.java" -nt "$CLASSES/BenchClient.class" ]]; then
  log "compiling BenchClient.java"
  mkdir -p "$CLASSES"
  "$JAVAC" -nowarn -d "$CLASSES" -cp "$LIBS" "$BENCH/BenchClient.java"
fi

# 3. A private copy of the binary (a rebuild during the run must not change what is measured).
WORK="${ODRADEK_BENCH_WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/broker_vs_kafka.XXXXXX")}"
mkdir -p "$WORK"
cleanup() {
  if [[ "${ODRADEK_BENCH_KEEP:-0}" != 1 ]]; then rm -rf "$WORK"; else log "kept $WORK"; fi
}
trap cleanup EXIT
cp "$BIN" "$WORK/odradek-broker"

DATE="$(date +%Y-%m-%d)"
OUT_DIR="${ODRADEK_BENCH_OUT_DIR:-$BENCH/results}"
mkdir -p "$OUT_DIR"
JSON="$OUT_DIR/broker_vs_kafka-$DATE.json"

git_rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git_dirty="$(git -C "$ROOT" status --porcelain --untracked-files=no -- broker-ref client-core 2>/dev/null | wc -l)"
if [[ -n "${ODRADEK_BROKER_BIN:-}" ]]; then
  bin_source="ODRADEK_BROKER_BIN=$ODRADEK_BROKER_BIN (not built by this run: the git fields describe the checkout, not necessarily the binary)"
else
  bin_source="built by this run: cargo build --release -p odradek-broker"
fi
META="$(python3 - "$git_rev" "$git_dirty" "$WORK/odradek-broker" "$JAVA" "$bin_source" <<'PY'
import hashlib, json, subprocess, sys
rev, dirty, binary, java, source = sys.argv[1:6]
jv = subprocess.run([java, "-version"], capture_output=True, text=True).stderr.splitlines()
rc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
print(json.dumps({
    "git_rev": rev, "git_modified_files_in_broker_and_core": int(dirty),
    "broker_sha256": hashlib.sha256(open(binary, "rb").read()).hexdigest(),
    "broker_binary": source,
    "java": jv[1] if len(jv) > 1 else (jv[0] if jv else "?"), "rustc": rc,
    "kafka": "4.4.0 (kafka_2.13, kafka-tools, kafka-clients from Maven)",
    "command": "bench/broker_vs_kafka.sh",
}))
PY
)"

log "running; workdir $WORK; results -> $JSON"
# shellcheck disable=SC2086
python3 "$BENCH/broker_vs_kafka.py" \
  --broker-bin "$WORK/odradek-broker" --kafka-sh "$KAFKA_SH" --java "$JAVA" \
  --libs "$LIBS" --classes "$CLASSES" --tools-log4j "$TOOLS_LOG4J" \
  --workdir "$WORK" --out "$JSON" --meta "$META" \
  --kafka-heap "${ODRADEK_KAFKA_HEAP:--Xmx512m -Xms128m}" \
  ${ODRADEK_BENCH_ARGS:-}

python3 "$BENCH/broker_vs_kafka_report.py" "$JSON" \
  --md "$OUT_DIR/broker_vs_kafka-$DATE.md" --svg "$OUT_DIR/broker_vs_kafka.svg"
log "done: $JSON, $OUT_DIR/broker_vs_kafka-$DATE.md, $OUT_DIR/broker_vs_kafka.svg"

# 5. Second phase: the broker as the bottleneck (bench/broker_bound.py), driven by odradek's
# Rust producer over several connections, default flush and an fsync per append, against the
# disk's dd bandwidth. Its data must be on a real disk: $WORK is under $TMPDIR, not /dev/shm.
if [[ "${ODRADEK_BENCH_SKIP_BOUND:-0}" != 1 ]]; then
  BENCH_REL="${CARGO_TARGET_DIR:-$BENCH/client/target}/release"
  log "cargo build --release (bench/client)"
  (cd "$BENCH/client" && cargo build --release --quiet) >&2
  cp "$BENCH_REL/odradek-bench" "$BENCH_REL/consume" "$WORK/"
  BOUND_JSON="$OUT_DIR/broker_bound-$DATE.json"
  # shellcheck disable=SC2086
  python3 "$BENCH/broker_bound.py" \
    --broker-bin "$WORK/odradek-broker" --odradek-bench "$WORK/odradek-bench" \
    --consume "$WORK/consume" --java "$JAVA" --libs "$LIBS" --tools-log4j "$TOOLS_LOG4J" \
    --workdir "$WORK" --out "$BOUND_JSON" --meta "$META" \
    --kafka-heap "${ODRADEK_KAFKA_HEAP:--Xmx512m -Xms128m}" ${ODRADEK_BOUND_ARGS:-}
  log "done: $BOUND_JSON"
fi
