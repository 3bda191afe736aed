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
VENV="$TARGET/bench-venv"
# A venv whose tools no longer run (moved or copied target dir, removed interpreter) is rebuilt.
if ! "$VENV/bin/pip" --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
# Reinstalled every run: the wheel must be the tree being measured.
"$VENV/bin/pip" install -q --force-reinstall --no-deps ./python
"$VENV/bin/pip" install -q -r tests/compat/python-peers.txt
mkdir -p bench/results
exec "$VENV/bin/python" python/bench/produce_consume.py \
  --broker-bin "$TARGET/release/odradek-broker" \
  --json "bench/results/python-$(date +%F).json" "$@"
