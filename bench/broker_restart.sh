#!/usr/bin/env bash
# Restart time of odradek-broker on a data dir with many partitions (default 228, the count of
# the broker_vs_kafka.sh run), after a clean shutdown: launch -> ApiVersions + Metadata answered.
# Optionally compares with another binary (same data, interleaved). ~1-2 min.
#
#   bench/broker_restart.sh                  build (release), fill, measure
#   ODRADEK_BEFORE_BIN=/path/old-broker bench/broker_restart.sh    also measure that binary
#
# Environment: ODRADEK_BROKER_BIN (skip the build), ODRADEK_RESTART_ARGS (for fill_data_dir,
# e.g. "--partitions 228 --batches 200"), ODRADEK_RESTART_REPEATS (default 7).
# Writes bench/results/broker_restart-<date>.json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
log() { printf 'broker_restart.sh: %s\n' "$*" >&2; }

(cd "$ROOT" && cargo build --release -p odradek-broker --example fill_data_dir) >&2
FILL="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/fill_data_dir"
if [[ -n "${ODRADEK_BROKER_BIN:-}" ]]; then
  BIN="$ODRADEK_BROKER_BIN"
else
  (cd "$ROOT" && cargo build --release -p odradek-broker) >&2
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/odradek-broker"
fi

W="$(mktemp -d "${TMPDIR:-/tmp}/broker_restart.XXXXXX")"
trap 'rm -rf "$W"' EXIT
cp "$BIN" "$W/after"
BINS=("after=$W/after")
if [[ -n "${ODRADEK_BEFORE_BIN:-}" ]]; then
  cp "$ODRADEK_BEFORE_BIN" "$W/before"
  BINS+=("before=$W/before")
fi

log "filling $W/data"
# shellcheck disable=SC2086
"$FILL" "$W/data" ${ODRADEK_RESTART_ARGS:-} >&2
du -sh "$W/data" >&2

OUT="$ROOT/bench/results/broker_restart-$(date +%Y-%m-%d).json"
mkdir -p "$(dirname "$OUT")"
python3 "$ROOT/bench/broker_restart.py" --data "$W/data" --workdir "$W/runs" \
  --repeats "${ODRADEK_RESTART_REPEATS:-7}" "${BINS[@]}" | tee "$OUT"
log "results in $OUT"
