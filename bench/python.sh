#!/usr/bin/env bash
# Python family for bench/run: odradek (release wheel) vs confluent-kafka vs kafka-python with
# python/bench/produce_consume.py, against one release odradek-broker it starts itself.
#
#   bench/python.sh [produce_consume.py args...]     e.g. --messages 100000 --rounds 1
#
# Builds the release broker, installs ./python and the peers (tests/compat/python-peers.txt)
# into target/bench-venv (reused when present), and writes bench/results/python-<date>.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cargo build --release -q -p odradek-broker
# shellcheck source=bench/bench-venv.sh
source "$ROOT/bench/bench-venv.sh"
mkdir -p bench/results
exec "$VENV/bin/python" python/bench/produce_consume.py \
  --broker-bin "$TARGET/release/odradek-broker" \
  --json "bench/results/python-$(date +%F).json" "$@"
