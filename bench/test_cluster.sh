#!/usr/bin/env bash
# The in-process test cluster's per-test cost in every language, next to Apache Kafka's start on
# the same machine: start + stop of an empty cluster and start + one produce/consume round trip +
# stop, for 1 and 3 brokers, from Rust, Python (odradek and confluent-kafka as the client), Node
# (odradek and kafkajs) and C; then Apache Kafka 4.4 (tests/compat/kafka.sh: launch -> ready, and
# stop). Release builds. ~10 min of building on 2 cores, ~2 min of measuring.
#
#   bench/test_cluster.sh [rounds]     (default 20 per cell)
#
# Writes bench/results/test_cluster-<date>.jsonl (one line per measurement) and prints the
# markdown table of BENCHMARKS.md's "Test cluster" section (bench/test_cluster/report.py).
# Environment: ODRADEK_BENCH_SKIP_KAFKA=1 skips Kafka; KAFKA_ROUNDS (default 5).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
HERE="$ROOT/bench/test_cluster"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
ROUNDS="${1:-20}"
OUT="$ROOT/bench/results/test_cluster-$(date -u +%Y-%m-%d).jsonl"
log() { printf 'test_cluster.sh: %s\n' "$*" >&2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
: >"$OUT"

log "building (release): the Rust bench, libodradek, the Node addon, the Python extension"
# Two invocations: with --example, cargo builds only example targets, so odradek-c's library
# would be left out.
(cd "$ROOT" && cargo build -q --release -p odradek-broker --example test_cluster_bench)
(cd "$ROOT" && cargo build -q --release -p odradek-c)
cc -O2 -I"$ROOT/c/include" "$HERE/bench.c" -o "$work/bench_c" -L"$TARGET/release" -lodradek \
  -Wl,-rpath,"$TARGET/release"
(cd "$ROOT/node" && [[ -d node_modules ]] || npm ci --no-audit --no-fund --loglevel=error --ignore-scripts)
(cd "$ROOT/node" && ODRADEK_NODE_PROFILE=release node scripts/build.js >&2)
VENV="$ROOT/python/.venv"
[[ -x "$VENV/bin/python" ]] || "$ROOT/python/test.sh" --co -q >/dev/null
(cd "$ROOT/python" && CARGO_TARGET_DIR="$TARGET/python" VIRTUAL_ENV="$VENV" \
  "$VENV/bin/maturin" develop -q --release --manifest-path "$ROOT/python/Cargo.toml" >&2)

log "measuring ($ROUNDS rounds per cell)"
"$TARGET/release/examples/test_cluster_bench" "$ROUNDS" >>"$OUT"
"$work/bench_c" "$ROUNDS" >>"$OUT"
"$VENV/bin/python" "$HERE/bench.py" "$ROUNDS" >>"$OUT"
mkdir -p "$work/modules"
ln -s "$ROOT/node" "$work/modules/odradek"
ln -s "$ROOT/node/node_modules/kafkajs" "$work/modules/kafkajs"
NODE_PATH="$work/modules" KAFKAJS_NO_PARTITIONER_WARNING=1 node "$HERE/bench.js" "$ROUNDS" >>"$OUT"

if [[ -z "${ODRADEK_BENCH_SKIP_KAFKA:-}" ]]; then
  KAFKA_SH="$ROOT/tests/compat/kafka.sh"
  "$KAFKA_SH" install
  for i in $(seq 0 "${KAFKA_ROUNDS:-5}"); do
    d="$work/kafka-$i"
    t0=$(date +%s%N)
    "$KAFKA_SH" start "$d" >/dev/null
    t1=$(date +%s%N)
    "$KAFKA_SH" stop "$d"
    t2=$(date +%s%N)
    rm -rf "$d"
    # Round 0 warms the page cache (jars) and is not recorded.
    [[ "$i" == 0 ]] && continue
    printf '{"lang":"kafka","client":"none","scenario":"empty","brokers":1,"start_ms":%s,"stop_ms":%s,"total_ms":%s}\n' \
      "$(( (t1 - t0) / 1000000 ))" "$(( (t2 - t1) / 1000000 ))" "$(( (t2 - t0) / 1000000 ))" >>"$OUT"
  done
fi

# Leave the debug builds the test suites use in place again.
(cd "$ROOT/python" && CARGO_TARGET_DIR="$TARGET/python" VIRTUAL_ENV="$VENV" \
  "$VENV/bin/maturin" develop -q --manifest-path "$ROOT/python/Cargo.toml" >&2) || true
log "wrote $OUT"
python3 "$HERE/report.py" "$OUT"
