#!/usr/bin/env bash
# Rebalance time: odradek's consumer vs librdkafka's (rdkafka crate, vendored librdkafka), same
# broker, same run, interleaved. Measures the time from one member's graceful close to the
# remaining members owning every partition again, for eager (range) and cooperative-sticky
# classic groups and KIP-848's consumer protocol (strategy `consumer`; the local broker heartbeats
# consumer-protocol members every 500 ms, the classic members' own setting: give an external
# broker group.consumer.heartbeat.interval.ms=500 and group.consumer.min.heartbeat.interval.ms=500).
#
#   bench/client/run_rebalance.sh            against a fresh odradek-broker (release build)
#   BOOTSTRAP=host:port bench/client/run_rebalance.sh   against a running broker (e.g. Kafka 4.4
#                                            from tests/compat/kafka.sh start DIR)
#
# Environment: REPEATS (default 7), MEMBERS (3), PARTITIONS (12), STRATEGIES
# (range,cooperative-sticky,consumer).
# Writes bench/client/results/rebalance-<date>.jsonl and prints a summary table (medians).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
REPEATS="${REPEATS:-7}"
MEMBERS="${MEMBERS:-3}"
PARTITIONS="${PARTITIONS:-12}"
REL="${CARGO_TARGET_DIR:-$ROOT/target}/release"
BENCH_REL="${CARGO_TARGET_DIR:-$HERE/target}/release"
log() { printf 'run_rebalance.sh: %s\n' "$*" >&2; }

(cd "$HERE" && cargo build --release --quiet --bin rebalance) >&2
(cd "$ROOT" && cargo build --release --quiet -p odradek-broker -p odradek-cli) >&2

WORK="$(mktemp -d)"
BROKER_PID=""
cleanup() {
  [[ -n "$BROKER_PID" ]] && kill "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
if [[ -z "${BOOTSTRAP:-}" ]]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  BOOTSTRAP="127.0.0.1:$port"
  "$REL/odradek-broker" \
    --override "listeners=PLAINTEXT://$BOOTSTRAP" --override "log.dirs=$WORK/data" \
    --override group.initial.rebalance.delay.ms=0 \
    --override group.consumer.heartbeat.interval.ms=500 \
    --override group.consumer.min.heartbeat.interval.ms=500 >"$WORK/broker.log" 2>&1 &
  BROKER_PID=$!
  BROKER="odradek-broker"
else
  BROKER="${BROKER_NAME:-external ($BOOTSTRAP)}"
fi
topic="rebalance-bench-$$"
for _ in $(seq 100); do
  "$REL/odradek" -b "$BOOTSTRAP" topics create "$topic" --partitions "$PARTITIONS" \
    >/dev/null 2>&1 && break
  sleep 0.1
done
mkdir -p "$HERE/results"
out="$HERE/results/rebalance-$(date +%F).jsonl"
log "measuring against $BROKER at $BOOTSTRAP: $REPEATS repeats, $MEMBERS members, $PARTITIONS partitions"
"$BENCH_REL/rebalance" --bootstrap "$BOOTSTRAP" --topic "$topic" --members "$MEMBERS" \
  --partitions "$PARTITIONS" --repeats "$REPEATS" \
  --strategies "${STRATEGIES:-range,cooperative-sticky,consumer}" | tee "$out"
python3 - "$out" "$BROKER" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"\nbroker: {sys.argv[2]}; time from a member's close to the new assignment (ms, median [min-max])\n")
print("| strategy | odradek | librdkafka | ratio (odradek/librdkafka) |")
print("|---|---:|---:|---:|")
for strategy in ("range", "cooperative-sticky", "consumer"):
    cell = {}
    for client in ("odradek", "rdkafka"):
        v = [r["rebalance_ms"] for r in rows if r["client"] == client and r["strategy"] == strategy and r["covered"]]
        cell[client] = v
    if not all(cell.values()):
        continue
    o, r = statistics.median(cell["odradek"]), statistics.median(cell["rdkafka"])
    fmt = lambda v: f"{statistics.median(v):.0f} [{min(v):.0f}-{max(v):.0f}]"
    print(f"| {strategy} | {fmt(cell['odradek'])} | {fmt(cell['rdkafka'])} | {o / r:.2f}x |")
PY
