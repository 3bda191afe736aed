#!/usr/bin/env bash
# Consumer throughput and CPU: odradek's consumer vs librdkafka's (rdkafka crate, vendored
# librdkafka), reading the same pre-filled topics from the beginning, against one odradek-broker
# on this machine (release build), interleaved, unattended. The peer runs twice per repeat: with
# librdkafka's defaults (`rdkafka`) and tuned for throughput (`rdkafka-tuned`, see RDKAFKA_TUNED
# in src/bin/consume.rs); the headline ratio is against the tuned peer.
#
#   bench/client/run_consume.sh       build (release), fill the topics once, measure, write
#                                     bench/client/results/consume-<date>.jsonl, print a table
#
# Environment (all optional):
#   REPEATS=5            measured runs per client and scenario (after one warm-up run each)
#   ONLY=<regex>         run only the scenarios whose name matches (e.g. 1KiB-none-p1)
#   COUNT_100=1000000    records per topic with 100 B values
#   COUNT_1K=300000      records per topic with 1 KiB values
#   CHECK_CRCS=false     check.crcs for both clients (librdkafka's default; odradek's is true)
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
printf '{"meta":true,"date":"%s","broker":"%s","repeats":%s,"count_100":%s,"count_1k":%s,"check_crcs":%s,"nproc":%s,"loadavg_start":"%s","git_rev":"%s","command":"bench/client/run_consume.sh"}\n' \
  "$(date +%F)" "$BROKER" "$REPEATS" "$COUNT_100" "$COUNT_1K" "$CHECK_CRCS" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" >>"$OUT"

# The ceiling of each scenario's codec: its batches decoded and walked on one core, no network.
for s in "${SCENARIOS[@]}"; do
  read -r name size comp parts count <<<"$s"
  line="$("$WORK/odradek-bench" decode-bound --size "$size" --compression "$comp")"
  printf '%s\n' "${line%\}},\"scenario\":\"$name\"}" >>"$OUT"
done

# 2. Measure: per scenario one warm-up pair, then REPEATS pairs, clients alternating.
START=$SECONDS
for s in "${SCENARIOS[@]}"; do
  read -r name size comp parts count <<<"$s"
  for rep in $(seq 0 "$REPEATS"); do
    for client in odradek rdkafka rdkafka-tuned; do
      line="$("$WORK/consume" --client "$client" --bootstrap "$BOOTSTRAP" \
        --topic "consume-$name-$suffix" --check-crcs "$CHECK_CRCS")"
      printf '%s\n' "${line%\}},\"scenario\":\"$name\",\"repeat\":$rep,\"warmup\":$([[ $rep == 0 ]] && echo true || echo false)}" >>"$OUT"
      log "$(printf '%-14s %-8s %-8s' "$name" "$client" "$([[ $rep == 0 ]] && echo warm-up || echo "#$rep")") $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%11.0f msgs/s %8.1f MB/s %6.3f us/msg cpu %5.0f MiB" % (d["msgs_per_s"], d["mb_per_s"], d["cpu_us_per_msg"], d["peak_rss_kb"]/1024))' "$line")"
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
data = [r for r in rows if "client" in r and not r["warmup"]]
print(f"\nbroker: {meta['broker']}; check.crcs={str(meta['check_crcs']).lower()}; "
      f"medians of {meta['repeats']} runs per client after a warm-up; load average at start "
      f"{meta['loadavg_start']}, at end {rows[-1].get('loadavg_end', '?')}\n")
print("| scenario | records | odradek msgs/s | librdkafka tuned msgs/s | ratio (tuned) "
      "| librdkafka defaults msgs/s | ratio (defaults) | CPU ratio (tuned) "
      "| peak RSS MiB (o / tuned / defaults) | odradek / single-core decode bound |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
clients = ("odradek", "rdkafka-tuned", "rdkafka")
for name in dict.fromkeys(r["scenario"] for r in data):
    med = {}
    for c in clients:
        rs = [r for r in data if r["scenario"] == name and r["client"] == c]
        if rs:
            med[c] = {k: statistics.median(r[k] for r in rs)
                      for k in ("msgs_per_s", "cpu_us_per_msg", "peak_rss_kb", "msgs")}
    if len(med) < len(clients):
        continue
    o, t, d = (med[c] for c in clients)
    bound = next((r["msgs_per_s"] for r in rows if r.get("decode_bound") and r["scenario"] == name), None)
    bound_cell = f"{o['msgs_per_s'] / bound:.0%} of {bound:,.0f}" if bound else "-"
    print(f"| {name} | {o['msgs']:,.0f} | {o['msgs_per_s']:,.0f} | {t['msgs_per_s']:,.0f} "
          f"| **{o['msgs_per_s'] / t['msgs_per_s']:.2f}x** | {d['msgs_per_s']:,.0f} "
          f"| {o['msgs_per_s'] / d['msgs_per_s']:.2f}x "
          f"| {t['cpu_us_per_msg'] / o['cpu_us_per_msg']:.2f}x "
          f"| {o['peak_rss_kb']/1024:.0f} / {t['peak_rss_kb']/1024:.0f} / {d['peak_rss_kb']/1024:.0f} "
          f"| {bound_cell} |")
PY
