#!/usr/bin/env bash
# Producer throughput and CPU: odradek's async producer vs librdkafka (rdkafka crate, vendored
# librdkafka) and the Java client (Apache Kafka's kafka-clients 4.4), against one odradek-broker
# on this machine, interleaved, unattended (on 2 cores: ~12 min without Java; the Java runs add
# ~8-9 min, about 1.3 s of JVM start per run plus its JIT warm-up, for ~18-20 min in all).
# librdkafka runs twice per repeat: with its defaults (`rdkafka`) and tuned for throughput
# (`rdkafka-tuned`, RDKAFKA_TUNED in src/main.rs); the headline is the tuned one.
#
# The Java peer (`java`) is our own program, bench/client/JavaBench.java, not Kafka's
# ProducerPerformance: the same send(record, callback) loop, but every delivery report is counted
# (ProducerPerformance counts a failed send as sent and only prints its stack trace), the values
# are odradek-bench's exact text-like bytes (ProducerPerformance draws a random letter per byte
# per record inside its timed loop, and random letters compress differently), and it reports the
# JVM's own CPU (utime+stime of every thread, JIT and GC included, /proc/self/stat) and VmHWM
# over the same interval as the other clients. Settings: the ones every client gets plus
# PRODUCER_TUNED in JavaBench.java (send.buffer.bytes=-1); JVM options as Kafka's
# kafka-producer-perf-test.sh runs it (-Xmx512M and kafka-run-class.sh's G1 options). A fresh JVM
# per run first sends JAVA_JIT_WARMUP records, unmeasured (its JIT would otherwise compile the
# hot path inside the measured interval); the measured count is the scenario's, as for every
# client. A Java run that exits non-zero (a delivery failed, fewer acknowledgements than records)
# or logs an ERROR line fails the cell, as any client's failed run does: a
# {"failed":true,...} line goes into the results file and the script exits 1.
#
#   bench/client/run.sh     build (release), run, write bench/client/results/producer-<date>.jsonl
#                           and the "## Producer: odradek vs librdkafka" section of BENCHMARKS.md
#
# Environment (all optional):
#   REPEATS=7               measured runs per client and scenario (after one warm-up run each)
#   ONLY=<regex>            run only the scenarios whose name matches (e.g. 1KiB-none-p1)
#   COUNT_100=2000000       records per run with 100 B values
#   COUNT_1K=600000         records per run with 1 KiB values
#   COUNT_10K=100000        records per run with 10 KiB values
#   BENCH_TMP=/dev/shm      where the broker keeps its data (default /dev/shm when it has 4 GiB
#                           free, else $TMPDIR or /tmp): in memory, so the kernel's writeback of
#                           several GB does not add noise to the client measurements
#   ODRADEK_RUNTIME=multi   tokio runtime of the odradek client: multi (2 workers) or current
#   JAVA_JIT_WARMUP=200000  records each Java run sends before its clock starts (at most the
#                           scenario's count)
#   JAVA_OPTS="-Xmx512M …"  JVM options of the Java client (default: kafka-producer-perf-test.sh's)
#   JAVA_HOME               Java 17+ (default: java and javac on PATH)
#   NO_JAVA=1               leave the Java client out (no jars, no JVM)
#   NO_REPORT=1             write only the .jsonl, leave BENCHMARKS.md alone
#   KEEP=1                  keep the broker's work directory
#   ODRADEK_REV=<rev>       label for the measured source tree when it has no .git
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
REPEATS="${REPEATS:-7}"
COUNT_100="${COUNT_100:-2000000}"
COUNT_1K="${COUNT_1K:-600000}"
COUNT_10K="${COUNT_10K:-100000}"
ODRADEK_RUNTIME="${ODRADEK_RUNTIME:-multi}"
JAVA_JIT_WARMUP="${JAVA_JIT_WARMUP:-200000}"
# Kafka's kafka-producer-perf-test.sh: KAFKA_HEAP_OPTS=-Xmx512M, and kafka-run-class.sh's
# KAFKA_JVM_PERFORMANCE_OPTS.
JAVA_OPTS="${JAVA_OPTS:--Xmx512M -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}"
CLIENTS=(odradek rdkafka rdkafka-tuned)
[[ "${NO_JAVA:-0}" == 1 ]] || CLIENTS+=(java)
REL="${CARGO_TARGET_DIR:-$ROOT/target}/release"        # workspace binaries
BENCH_REL="${CARGO_TARGET_DIR:-$HERE/target}/release" # bench/client binaries
log() { printf 'bench/client/run.sh: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
source "$HERE/lib.sh"

# 1. Binaries, release builds.
log "cargo build --release (bench/client)"
(cd "$HERE" && cargo build --release --quiet) >&2
log "cargo build --release -p odradek-broker"
(cd "$ROOT" && cargo build --release --quiet -p odradek-broker) >&2

pick_bench_tmp
WORK="$(mktemp -d "$BENCH_TMP/odradek-producer-bench.XXXXXX")"
# Private copies: a rebuild during the run must not change what is measured.
cp "$REL/odradek-broker" "$WORK/odradek-broker"
cp "$BENCH_REL/odradek-bench" "$WORK/odradek-bench"
BENCH="$WORK/odradek-bench"

BROKER_PID=""
cleanup() {
  stop_broker
  if [[ "${KEEP:-0}" == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The Java client (setup_java_bench in lib.sh).
[[ "${NO_JAVA:-0}" == 1 ]] || setup_java_bench

# 2. One broker on an ephemeral port. Retention keeps at most ~0.5-0.75 GiB per partition
# (segments of 256 MiB, checked every 5 s) and each scenario's topics are deleted after it, so the
# data of a run (~20 GB written, ~28 GB with Java) never needs more than ~3 GiB for a 1-partition
# scenario (a topic per client); 100B-acks1-none-p8 keeps all of its ~1.6 GB per client (~0.2 GB
# per partition), ~6.5 GB with Java.
start_broker "$WORK/odradek-broker" "$WORK" log.segment.bytes=268435456 \
  log.retention.bytes=536870912 log.retention.check.interval.ms=5000 \
  log.segment.delete.delay.ms=1000
log "broker pid $BROKER_PID on $BOOTSTRAP"

# 3. Scenarios: name size acks compression partitions count.
SCENARIOS=(
  "100B-acks1-none-p1      100  1   none 1 $COUNT_100"
  "100B-acksall-none-p1    100  all none 1 $COUNT_100"
  "100B-acks1-lz4-p1       100  1   lz4  1 $COUNT_100"
  "100B-acksall-lz4-p1     100  all lz4  1 $COUNT_100"
  "1KiB-acks1-none-p1      1024 1   none 1 $COUNT_1K"
  "1KiB-acksall-none-p1    1024 all none 1 $COUNT_1K"
  "1KiB-acks1-lz4-p1       1024 1   lz4  1 $COUNT_1K"
  "1KiB-acksall-lz4-p1     1024 all lz4  1 $COUNT_1K"
  "100B-acks1-none-p8      100  1   none 8 $COUNT_100"
  "1KiB-acks1-zstd-p1      1024 1   zstd 1 $COUNT_1K"
  "1KiB-acksall-zstd-p8    1024 all zstd 8 $COUNT_1K"
  "10KiB-acksall-none-p1   10240 all none 1 $COUNT_10K"
)
only_matching

DATE="$(date +%Y-%m-%d)"
mkdir -p "$HERE/results"
OUT="$HERE/results/producer-$DATE.jsonl"
: >"$OUT"

# Run metadata, first line of the results file.
VERSION_JSON="$("$BENCH" version)"
CPU_MODEL="$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)"
# ODRADEK_REV labels a tree without .git (e.g. one exported with `git archive`).
GIT_REV="${ODRADEK_REV:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
GIT_DIRTY="$({ git -C "$ROOT" status --porcelain --untracked-files=no -- client-core broker-ref 2>/dev/null || true; } | wc -l)"
python3 - "$VERSION_JSON" "$CPU_MODEL" "$(nproc)" "$GIT_REV" "$GIT_DIRTY" "$(rustc --version)" \
  "$REPEATS" "$COUNT_100" "$COUNT_1K" "$ODRADEK_RUNTIME" "$(uname -sr)" \
  "$(df -PT "$WORK" | awk 'NR==2 {print $2}')" "${JAVA_VERSION:-}" "$JAVA_JIT_WARMUP" \
  "${JAVA_OPTS}" "$COUNT_10K" >>"$OUT" <<'PY'
import json, sys
v, cpu, nproc, rev, dirty, rustc, reps, c100, c1k, rt, kernel, fs, jvm, jwarm, jopts, c10k = sys.argv[1:17]
java = {"java": jvm, "kafka_clients": "4.4.0", "java_jit_warmup": int(jwarm), "java_opts": jopts} if jvm else {}
mem_kb = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal:")), 0)
print(json.dumps({"meta": True, "date": __import__("datetime").date.today().isoformat(),
    "cpu_model": cpu, "nproc": int(nproc), "mem_gib": round(mem_kb / 1048576), "kernel": kernel,
    "rustc": rustc, "git_rev": rev, "git_modified_files_in_client_core_and_broker": int(dirty),
    **json.loads(v), **java, "repeats": int(reps), "count_100": int(c100), "count_1k": int(c1k),
    "count_10k": int(c10k),
    "odradek_runtime": rt, "broker_data_fs": fs, "loadavg_start": open("/proc/loadavg").read().split()[0],
    "command": "bench/client/run.sh"}))
PY

# Records a Java run sends before its clock starts: JAVA_JIT_WARMUP, at most the run's count.
java_warmup() { echo $(($1 < JAVA_JIT_WARMUP ? $1 : JAVA_JIT_WARMUP)); }

run_one() { # client scenario repeat(0 = warm-up) size acks compression partitions count
  local client="$1" name="$2" rep="$3" size="$4" acks="$5" comp="$6" parts="$7" count="$8"
  local line rc=0 err="$WORK/client.err" acked
  if [[ "$client" == java ]]; then
    line="$("${JAVA_BENCH[@]}" produce --bootstrap "$BOOTSTRAP" --topic "bench-$name-$client" \
      --count "$count" --size "$size" --acks "$acks" --compression "$comp" \
      --jit-warmup "$(java_warmup "$count")" 2>"$err")" || rc=$?
  else
    line="$("$BENCH" produce --client "$client" --bootstrap "$BOOTSTRAP" --topic "bench-$name-$client" \
      --count "$count" --size "$size" --acks "$acks" --compression "$comp" --partitions "$parts" \
      --runtime "$ODRADEK_RUNTIME" 2>"$err")" || rc=$?
  fi
  cat "$err" >&2
  # Every client exits non-zero when a delivery failed or fewer were acknowledged than sent.
  (( rc == 0 )) || fail_cell "$client" "$name" "$rep" "exit status $rc: $(tail -n 5 "$err")"
  # The Java client logs to stderr at WARN and above (tests/compat's log4j2 configuration):
  # an ERROR line fails the cell even when every record was acknowledged.
  if [[ "$client" == java ]] && grep -qE '^\[[^]]*\] (ERROR|FATAL) ' "$err"; then
    fail_cell "$client" "$name" "$rep" "error logged: $(grep -m3 -E '^\[[^]]*\] (ERROR|FATAL) ' "$err")"
  fi
  acked="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["msgs"])' "$line" 2>/dev/null || echo "no result line")"
  [[ "$acked" == "$count" ]] || fail_cell "$client" "$name" "$rep" "reported $acked records, asked $count"
  printf '%s\n' "${line%\}},\"scenario\":\"$name\",\"repeat\":$rep,\"warmup\":$([[ $rep == 0 ]] && echo true || echo false)}" >>"$OUT"
  log "$(printf '%-22s %-13s %s' "$name" "$client" "$([[ $rep == 0 ]] && echo warm-up || echo "#$rep")"): $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%11.0f msgs/s %8.1f MB/s %6.2f us/msg cpu %5.0f MiB" % (d["msgs_per_s"], d["mb_per_s"], d["cpu_us_per_msg"], d["peak_rss_kb"]/1024))' "$line")"
}

# Bytes the broker stored for a client's topic (every partition's .log segments).
stored_bytes() {
  local total=0 f
  for f in "$WORK/data/bench-$1-$2-"[0-9]*/*.log; do
    [[ -e "$f" ]] && total=$((total + $(stat -c %s "$f")))
  done
  echo "$total"
}

START=$SECONDS
for s in "${SCENARIOS[@]}"; do
  read -r name size acks comp parts count <<<"$s"
  # One topic per client, so what each client's batches cost on disk can be checked.
  for client in "${CLIENTS[@]}"; do
    "$BENCH" create-topic --bootstrap "$BOOTSTRAP" --topic "bench-$name-$client" --partitions "$parts"
  done
  for rep in $(seq 0 "$REPEATS"); do
    for client in "${CLIENTS[@]}"; do
      run_one "$client" "$name" "$rep" "$size" "$acks" "$comp" "$parts" "$count"
    done
    if [[ $rep == 0 ]]; then
      # After the warm-up round each topic holds exactly one run (+1 priming record; the Java
      # topic also its JIT warm-up records): the stored size shows whether the codec was really
      # applied (librdkafka silently sends uncompressed batches to a broker whose ApiVersions
      # lack what it requires for a codec).
      for client in "${CLIENTS[@]}"; do
        sent=$count
        [[ "$client" == java ]] && sent=$((count + $(java_warmup "$count")))
        printf '{"storage":true,"scenario":"%s","client":"%s","stored_bytes":%s,"value_bytes":%s}\n' \
          "$name" "$client" "$(stored_bytes "$name" "$client")" "$((sent * size))" >>"$OUT"
      done
    fi
  done
  for client in "${CLIENTS[@]}"; do
    "$BENCH" delete-topic --bootstrap "$BOOTSTRAP" --topic "bench-$name-$client"
  done
done
printf '{"end":true,"elapsed_s":%s,"loadavg_end":"%s"}\n' "$((SECONDS - START))" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"
log "all runs done in $((SECONDS - START)) s; results in $OUT"

if [[ "${NO_REPORT:-0}" != 1 ]]; then
  python3 "$HERE/report.py" "$OUT" --benchmarks "$ROOT/BENCHMARKS.md" --analysis "$HERE/analysis.md"
  log "updated the producer section of $ROOT/BENCHMARKS.md"
fi
