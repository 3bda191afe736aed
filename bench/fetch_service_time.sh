#!/usr/bin/env bash
# Broker-side Fetch service time, odradek-broker vs Apache Kafka 4.4.0, without a consumer library
# (bench/fetch_service_time.py): both brokers up, the same five topics filled by ProducerPerformance,
# then 5 interleaved passes per topic reading everything from offset 0. ~3 min on 2 cores.
#
#   bench/fetch_service_time.sh     writes bench/results/fetch_service_time-<date>.jsonl
#
# Environment: ODRADEK_BROKER_BIN (default target/release/odradek-broker, not built here: run
# bench/broker_vs_kafka.sh or cargo build --release -p odradek-broker first).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
KAFKA_SH="$ROOT/tests/compat/kafka.sh"
BIN="${ODRADEK_BROKER_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/odradek-broker}"
CLASSES="$ROOT/bench/.cache/classes"
[[ -f "$CLASSES/BenchClient.class" ]] || { echo "run bench/broker_vs_kafka.sh once first (compiles BenchClient)" >&2; exit 1; }
W="$(mktemp -d "${TMPDIR:-/tmp}/fetch_service_time.XXXXXX")"
OUT="$ROOT/bench/results/fetch_service_time-$(date +%Y-%m-%d).jsonl"
mkdir -p "$W/odr" "$W/kafka" "$(dirname "$OUT")"
OP=""
cleanup() {
  [[ -n "$OP" ]] && kill -TERM "$OP" 2>/dev/null && wait "$OP" || true
  "$KAFKA_SH" stop "$W/kafka" || true
  rm -rf "$W"
}
trap cleanup EXIT

cp "$BIN" "$W/odradek-broker"
"$W/odradek-broker" --override listeners=PLAINTEXT://127.0.0.1:0 --override "log.dirs=$W/odr/data" \
  --override log.segment.bytes=104857600 >"$W/odr/out" 2>"$W/odr/err" &
OP=$!
for _ in $(seq 1 500); do [[ -s "$W/odr/out" ]] && break; sleep 0.01; done
ODR="$(sed -n 's/.*listening on //p' "$W/odr/out")"
KAF="$("$KAFKA_SH" start "$W/kafka")"
LIBS="$("$KAFKA_SH" classpath)"
L4="-Dlog4j2.configurationFile=$ROOT/tests/compat/.cache/kafka-tools-log4j2.properties"
# name:partitions:records:size:codec
CELLS="f100none8:8:300000:100:none f100lz48:8:300000:100:lz4 f1knone8:8:100000:1024:none f100lz41:1:300000:100:lz4 f1klz41:1:100000:1024:lz4"
for a in "$ODR" "$KAF"; do
  specs=""
  for c in $CELLS; do IFS=: read -r t p _ _ _ <<<"$c"; specs="$specs $t:$p"; done
  # shellcheck disable=SC2086
  java -cp "$LIBS:$CLASSES" "$L4" BenchClient create "$a" $specs
  for c in $CELLS; do
    IFS=: read -r t p n s codec <<<"$c"
    "$KAFKA_SH" run org.apache.kafka.tools.ProducerPerformance --topic "$t" --num-records "$n" \
      --record-size "$s" --throughput -1 --reporting-interval 60000 --command-property \
      "bootstrap.servers=$a" acks=1 enable.idempotence=false "compression.type=$codec" >/dev/null
  done
done
sync
: >"$OUT"
for c in $CELLS; do
  IFS=: read -r t p _ _ _ <<<"$c"
  for r in 1 2 3 4 5; do
    for b in odradek kafka; do
      if [[ $b == odradek ]]; then a=$ODR; else a=$KAF; fi
      line="$(python3 "$ROOT/bench/fetch_service_time.py" "$a" "$t" "$p")"
      echo "{\"topic\":\"$t\",\"partitions\":$p,\"broker\":\"$b\",\"pass\":$r,${line#\{}" | tee -a "$OUT"
    done
  done
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| topic | partitions | odradek MB/s | Kafka MB/s | odradek ms/request | Kafka ms/request |")
print("|---|---:|---:|---:|---:|---:|")
for t in dict.fromkeys(r["topic"] for r in rows):
    v = lambda b, k: statistics.median(r[k] for r in rows if r["topic"] == t and r["broker"] == b)
    p = next(r["partitions"] for r in rows if r["topic"] == t)
    print(f"| {t} | {p} | {v('odradek', 'mb_per_s'):.0f} | {v('kafka', 'mb_per_s'):.0f} "
          f"| {v('odradek', 'latency_ms_median'):.2f} | {v('kafka', 'latency_ms_median'):.2f} |")
PY
