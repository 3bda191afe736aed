#!/usr/bin/env bash
# Idempotent and transactional produce throughput: odradek vs librdkafka (rdkafka crate,
# vendored librdkafka) in one run, interleaved, against one broker. librdkafka runs twice per
# repeat: with its defaults (`rdkafka`) and tuned for throughput (`rdkafka-tuned`, RDKAFKA_TUNED
# in src/main.rs); the headline is the tuned one.
#
#   bench/client/run_txn.sh      build (release), run, write bench/client/results/txn-<date>.jsonl
#                                and print a markdown table of medians
#
# Modes (100 B values, acks=all, 1 partition): plain (enable.idempotence=false, for reference),
# idempotent, transactional with a commit every 1,000 and every 10,000 records.
#
# Environment (all optional):
#   BOOTSTRAP=host:port   broker to use (must serve transactions); default: a fresh Apache Kafka
#                         4.x from tests/compat/kafka.sh, stopped afterwards
#   REPEATS=3             measured runs per client and mode (after one warm-up run each)
#   COUNT=500000          records per run
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
REPEATS="${REPEATS:-3}"
COUNT="${COUNT:-500000}"
BENCH_REL="${CARGO_TARGET_DIR:-$HERE/target}/release"
log() { printf 'bench/client/run_txn.sh: %s\n' "$*" >&2; }

log "cargo build --release (bench/client)"
(cd "$HERE" && cargo build --release --quiet) >&2
WORK="$(mktemp -d)"
cp "$BENCH_REL/odradek-bench" "$WORK/odradek-bench"
BENCH="$WORK/odradek-bench"
KAFKA_DIR=""
cleanup() {
  if [[ -n "$KAFKA_DIR" ]]; then "$ROOT/tests/compat/kafka.sh" stop "$KAFKA_DIR" >&2 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BROKER="${BOOTSTRAP:-}"
if [[ -z "$BROKER" ]]; then
  KAFKA_DIR="$WORK/kafka"
  BROKER="$("$ROOT/tests/compat/kafka.sh" start "$KAFKA_DIR")"
  BROKER_LABEL="apache-kafka-4.x (tests/compat/kafka.sh)"
else
  BROKER_LABEL="$BROKER"
fi
log "broker $BROKER"

MODES=(
  "plain          plain         0"
  "idempotent     idempotent    0"
  "txn-1000       transactional 1000"
  "txn-10000      transactional 10000"
)
mkdir -p "$HERE/results"
OUT="$HERE/results/txn-$(date +%Y-%m-%d).jsonl"
printf '{"meta":true,"date":"%s","broker":"%s","count":%s,"repeats":%s,"nproc":%s,"version":%s}\n' \
  "$(date +%Y-%m-%d)" "$BROKER_LABEL" "$COUNT" "$REPEATS" "$(nproc)" "$("$BENCH" version)" >"$OUT"

for m in "${MODES[@]}"; do
  read -r name mode every <<<"$m"
  for rep in $(seq 0 "$REPEATS"); do
    for client in odradek rdkafka rdkafka-tuned; do
      topic="benchtxn-$name-$client-$$"
      line="$("$BENCH" produce --client "$client" --bootstrap "$BROKER" --topic "$topic" \
        --count "$COUNT" --size 100 --acks all --compression none --partitions 1 \
        --mode "$mode" --commit-every "${every/#0/1000}")"
      printf '%s\n' "${line%\}},\"scenario\":\"$name\",\"repeat\":$rep,\"warmup\":$([[ $rep == 0 ]] && echo true || echo false)}" >>"$OUT"
      log "$(printf '%-10s %-8s %-8s' "$name" "$client" "$([[ $rep == 0 ]] && echo warm-up || echo "#$rep")") $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%10.0f msgs/s %6.2f us/msg cpu" % (d["msgs_per_s"], d["cpu_us_per_msg"]))' "$line")"
      if [[ $rep == "$REPEATS" ]]; then "$BENCH" delete-topic --bootstrap "$BROKER" --topic "$topic" || true; fi
    done
  done
done
log "results in $OUT"

python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
meta = rows[0]
runs = [r for r in rows[1:] if not r.get("warmup")]
print("Broker: %s; %d records of 100 B per run, acks=all, 1 partition; median of %d runs.\n"
      % (meta["broker"], meta["count"], meta["repeats"]))
print("| mode | odradek msgs/s | librdkafka tuned msgs/s | ratio | librdkafka defaults msgs/s | ratio "
      "| odradek CPU us/msg | librdkafka tuned CPU us/msg | CPU ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for scenario in dict.fromkeys(r["scenario"] for r in runs):
    med = {}
    for client in ("odradek", "rdkafka", "rdkafka-tuned"):
        rs = [r for r in runs if r["scenario"] == scenario and r["client"] == client]
        med[client] = (statistics.median(r["msgs_per_s"] for r in rs),
                       statistics.median(r["cpu_us_per_msg"] for r in rs))
    o, d, t = med["odradek"], med["rdkafka"], med["rdkafka-tuned"]
    print("| %s | %.0f | %.0f | %.2fx | %.0f | %.2fx | %.2f | %.2f | %.2fx |"
          % (scenario, o[0], t[0], o[0] / t[0], d[0], o[0] / d[0], o[1], t[1], t[1] / o[1]))
PY
