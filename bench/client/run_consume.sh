#!/usr/bin/env bash
# Consumer throughput and CPU: odradek's consumer vs librdkafka's (rdkafka crate, vendored
# librdkafka) and the Java client's (Apache Kafka's kafka-clients 4.4), reading the same
# pre-filled topics from the beginning, against one odradek-broker on this machine (release
# build), interleaved, unattended (on 2 cores: ~2 min of measuring at the default counts without
# Java, ~4-5 min with it, after the builds). librdkafka runs twice per repeat: with its defaults (`rdkafka`) and tuned for throughput (`rdkafka-tuned`, see
# RDKAFKA_TUNED in src/bin/consume.rs); the headline ratio is against the tuned peer.
#
# The Java peer (`java`) is our own program, bench/client/JavaBench.java, not Kafka's
# ConsumerPerformance (which joins a group and reports no CPU): assign() every partition from the
# beginning with no group, poll() until the records the topic holds were returned, each value
# touched as the other consumers do; it reports the JVM's own CPU (utime+stime of every thread,
# JIT and GC included, /proc/self/stat) and VmHWM over the same interval as the other clients.
# Settings: check.crcs as for the others plus CONSUMER_TUNED in JavaBench.java
# (receive.buffer.bytes=-1, max.partition.fetch.bytes=8388608, max.poll.records=10000); JVM
# options as Kafka's kafka-consumer-perf-test.sh runs it (-Xmx512M, kafka-run-class.sh's G1
# options). In each run's fresh JVM another consumer first reads JAVA_JIT_WARMUP records of the
# topic, unmeasured, so the JIT has compiled the poll path before the measured consumer starts.
#
# Every run of every client checks its work: it must read exactly the records the topic was
# filled with (COUNT + the producer's priming record) with the same value bytes and checksum of
# first bytes as every other run of that topic; a run that exits non-zero, reads another count
# or other bytes, or (Java) logs an ERROR line fails the cell: a {"failed":true,...} line goes
# into the results file and the script exits 1.
#
#   bench/client/run_consume.sh       build (release), fill the topics once, measure, write
#                                     bench/client/results/consume-<date>.jsonl, print a table
#
# Environment (all optional):
#   REPEATS=5            measured runs per client and scenario (after one warm-up run each)
#   ONLY=<regex>         run only the scenarios whose name matches (e.g. 1KiB-none-p1)
#   COUNT_100=1000000    records per topic with 100 B values
#   COUNT_1K=300000      records per topic with 1 KiB values
#   CHECK_CRCS=false     check.crcs for every client (librdkafka's default; odradek's and Java's
#                        is true)
#   JAVA_JIT_WARMUP=200000  records the Java run's warm-up consumer reads first (at most COUNT)
#   JAVA_OPTS="-Xmx512M …"  JVM options of the Java client (default: kafka-consumer-perf-test.sh's)
#   JAVA_HOME            Java 17+ (default: java and javac on PATH)
#   NO_JAVA=1            leave the Java client out (no jars, no JVM)
#   BENCH_TMP=/dev/shm   where the broker keeps its data (in memory when it has room, so page
#                        cache misses and writeback add no noise)
#   BOOTSTRAP=host:port  use a running broker instead of starting one (topics are created on it)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
REPEATS="${REPEATS:-5}"
COUNT_100="${COUNT_100:-1000000}"
COUNT_1K="${COUNT_1K:-300000}"
CHECK_CRCS="${CHECK_CRCS:-false}"
JAVA_JIT_WARMUP="${JAVA_JIT_WARMUP:-200000}"
# Kafka's kafka-consumer-perf-test.sh: KAFKA_HEAP_OPTS=-Xmx512M, and kafka-run-class.sh's
# KAFKA_JVM_PERFORMANCE_OPTS.
JAVA_OPTS="${JAVA_OPTS:--Xmx512M -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}"
CLIENTS=(odradek rdkafka rdkafka-tuned)
[[ "${NO_JAVA:-0}" == 1 ]] || CLIENTS+=(java)
REL="${CARGO_TARGET_DIR:-$ROOT/target}/release"
BENCH_REL="${CARGO_TARGET_DIR:-$HERE/target}/release"
log() { printf 'run_consume.sh: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
source "$HERE/lib.sh"

log "cargo build --release (bench/client: odradek-bench, consume)"
(cd "$HERE" && cargo build --release --quiet --bin odradek-bench --bin consume) >&2
log "cargo build --release -p odradek-broker"
(cd "$ROOT" && cargo build --release --quiet -p odradek-broker) >&2

pick_bench_tmp
WORK="$(mktemp -d "$BENCH_TMP/odradek-consume-bench.XXXXXX")"
# Private copies: a rebuild during the run must not change what is measured.
cp "$REL/odradek-broker" "$BENCH_REL/odradek-bench" \
  "$BENCH_REL/consume" "$WORK/"

BROKER_PID=""
cleanup() {
  stop_broker
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The Java client (setup_java_bench in lib.sh).
[[ "${NO_JAVA:-0}" == 1 ]] || setup_java_bench

BROKER="${BROKER_NAME:-odradek-broker (release)}"
if [[ -z "${BOOTSTRAP:-}" ]]; then
  start_broker "$WORK/odradek-broker" "$WORK"
fi
log "broker $BROKER on $BOOTSTRAP"

# Scenarios: name size compression partitions count.
SCENARIOS=(
  "100B-none-p1 100  none 1 $COUNT_100"
  "100B-lz4-p1  100  lz4  1 $COUNT_100"
  "1KiB-none-p1 1024 none 1 $COUNT_1K"
  "1KiB-lz4-p1  1024 lz4  1 $COUNT_1K"
  "100B-none-p8 100  none 8 $COUNT_100"
  "100B-lz4-p8  100  lz4  8 $COUNT_100"
  "1KiB-none-p8 1024 none 8 $COUNT_1K"
  "1KiB-lz4-p8  1024 lz4  8 $COUNT_1K"
  "1KiB-zstd-p1 1024 zstd 1 $COUNT_1K"
)
only_matching

# 1. Fill every topic once (odradek's producer: linger.ms=5, batch.size=1000000, acks=1, text-like
# values that lz4 compresses about 2x; keyless, so 8-partition topics get sticky batches).
suffix="$$"
for s in "${SCENARIOS[@]}"; do
  read -r name size comp parts count <<<"$s"
  "$WORK/odradek-bench" produce --client odradek --bootstrap "$BOOTSTRAP" \
    --topic "consume-$name-$suffix" --count "$count" --size "$size" --acks 1 \
    --compression "$comp" --partitions "$parts" >/dev/null
  log "filled consume-$name-$suffix: $count records of $size B, $comp, $parts partition(s)"
done

mkdir -p "$HERE/results"
OUT="$HERE/results/consume-$(date +%F).jsonl"
: >"$OUT"
printf '{"meta":true,"date":"%s","broker":"%s","repeats":%s,"count_100":%s,"count_1k":%s,"check_crcs":%s,"nproc":%s,"loadavg_start":"%s","git_rev":"%s","command":"bench/client/run_consume.sh"%s}\n' \
  "$(date +%F)" "$BROKER" "$REPEATS" "$COUNT_100" "$COUNT_1K" "$CHECK_CRCS" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  "$([[ -n "${JAVA_VERSION:-}" ]] && printf ',"java":"%s","kafka_clients":"4.4.0","java_jit_warmup":%s,"java_opts":"%s"' "$JAVA_VERSION" "$JAVA_JIT_WARMUP" "$JAVA_OPTS")" >>"$OUT"

# The ceiling of each scenario's codec: its batches decoded and walked on one core, no network.
for s in "${SCENARIOS[@]}"; do
  read -r name size comp parts count <<<"$s"
  line="$("$WORK/odradek-bench" decode-bound --size "$size" --compression "$comp")"
  printf '%s\n' "${line%\}},\"scenario\":\"$name\"}" >>"$OUT"
done

# 2. Measure: per scenario one warm-up round, then REPEATS rounds, clients alternating. Every run
# must read the records the topic was filled with (COUNT + 1 priming record), and the same value
# bytes and checksum as the scenario's first run.
START=$SECONDS
err="$WORK/client.err"
for s in "${SCENARIOS[@]}"; do
  read -r name size comp parts count <<<"$s"
  reference=""
  for rep in $(seq 0 "$REPEATS"); do
    for client in "${CLIENTS[@]}"; do
      rc=0
      if [[ "$client" == java ]]; then
        line="$("${JAVA_BENCH[@]}" consume --bootstrap "$BOOTSTRAP" --topic "consume-$name-$suffix" \
          --check-crcs "$CHECK_CRCS" --expect "$((count + 1))" \
          --jit-warmup "$((count < JAVA_JIT_WARMUP ? count : JAVA_JIT_WARMUP))" 2>"$err")" || rc=$?
      else
        line="$("$WORK/consume" --client "$client" --bootstrap "$BOOTSTRAP" \
          --topic "consume-$name-$suffix" --check-crcs "$CHECK_CRCS" 2>"$err")" || rc=$?
      fi
      cat "$err" >&2
      (( rc == 0 )) || fail_cell "$client" "$name" "$rep" "exit status $rc: $(tail -n 5 "$err")"
      if [[ "$client" == java ]] && grep -qE '^\[[^]]*\] (ERROR|FATAL) ' "$err"; then
        fail_cell "$client" "$name" "$rep" "error logged: $(grep -m3 -E '^\[[^]]*\] (ERROR|FATAL) ' "$err")"
      fi
      got="$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["msgs"], d["value_bytes"], d["checksum"])' "$line" 2>/dev/null || echo "no result line")"
      [[ "${got%% *}" == "$((count + 1))" ]] \
        || fail_cell "$client" "$name" "$rep" "read ${got%% *} records, the topic was filled with $((count + 1))"
      [[ -z "$reference" ]] && reference="$got"
      [[ "$got" == "$reference" ]] \
        || fail_cell "$client" "$name" "$rep" "read (records value_bytes checksum) $got, the scenario's first run read $reference"
      printf '%s\n' "${line%\}},\"scenario\":\"$name\",\"repeat\":$rep,\"warmup\":$([[ $rep == 0 ]] && echo true || echo false)}" >>"$OUT"
      log "$(printf '%-14s %-13s %-8s' "$name" "$client" "$([[ $rep == 0 ]] && echo warm-up || echo "#$rep")") $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%11.0f msgs/s %8.1f MB/s %6.3f us/msg cpu %5.0f MiB" % (d["msgs_per_s"], d["mb_per_s"], d["cpu_us_per_msg"], d["peak_rss_kb"]/1024))' "$line")"
    done
  done
done
printf '{"end":true,"elapsed_s":%s,"loadavg_end":"%s"}\n' "$((SECONDS - START))" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"
log "measured in $((SECONDS - START)) s; results in $OUT"

# 3. Table of medians; the headline ratio is against the tuned peer.
python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta = rows[0]
data = [r for r in rows if "client" in r and not r["warmup"] and not r.get("failed")]
print(f"\nbroker: {meta['broker']}; check.crcs={str(meta['check_crcs']).lower()}; "
      f"medians of {meta['repeats']} runs per client after a warm-up; load average at start "
      f"{meta['loadavg_start']}, at end {rows[-1].get('loadavg_end', '?')}\n")
# The Java client's columns follow when the run measured it (JavaBench.java, CONSUMER_TUNED).
java = any(r["client"] == "java" for r in data)
print("| scenario | records | odradek msgs/s | librdkafka tuned msgs/s | ratio (tuned) "
      "| librdkafka defaults msgs/s | ratio (defaults) | CPU ratio (tuned) "
      "| peak RSS MiB (o / tuned / defaults) | odradek / single-core decode bound |"
      + (" Java msgs/s | ratio (Java) | CPU ratio (Java) | Java peak RSS MiB |" if java else ""))
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" * 4 if java else ""))
clients = ("odradek", "rdkafka-tuned", "rdkafka")
for name in dict.fromkeys(r["scenario"] for r in data):
    med = {}
    for c in clients + (("java",) if java else ()):
        rs = [r for r in data if r["scenario"] == name and r["client"] == c]
        if rs:
            med[c] = {k: statistics.median(r[k] for r in rs)
                      for k in ("msgs_per_s", "cpu_us_per_msg", "peak_rss_kb", "msgs")}
    if any(c not in med for c in clients):
        continue
    o, t, d = (med[c] for c in clients)
    bound = next((r["msgs_per_s"] for r in rows if r.get("decode_bound") and r["scenario"] == name), None)
    bound_cell = f"{o['msgs_per_s'] / bound:.0%} of {bound:,.0f}" if bound else "-"
    print(f"| {name} | {o['msgs']:,.0f} | {o['msgs_per_s']:,.0f} | {t['msgs_per_s']:,.0f} "
          f"| **{o['msgs_per_s'] / t['msgs_per_s']:.2f}x** | {d['msgs_per_s']:,.0f} "
          f"| {o['msgs_per_s'] / d['msgs_per_s']:.2f}x "
          f"| {t['cpu_us_per_msg'] / o['cpu_us_per_msg']:.2f}x "
          f"| {o['peak_rss_kb']/1024:.0f} / {t['peak_rss_kb']/1024:.0f} / {d['peak_rss_kb']/1024:.0f} "
          f"| {bound_cell} |", end="")
    j = med.get("java")
    if j:
        print(f" {j['msgs_per_s']:,.0f} | {o['msgs_per_s'] / j['msgs_per_s']:.2f}x "
              f"| {j['cpu_us_per_msg'] / o['cpu_us_per_msg']:.2f}x | {j['peak_rss_kb']/1024:.0f} |", end="")
    elif java:
        print(" - | - | - | - |", end="")
    print()
failed = [r for r in rows if r.get("failed")]
for r in failed:
    print(f"\nFAILED: {r['scenario']} {r['client']} run {r['repeat']}: {r['error']}")
PY
