#!/usr/bin/env bash
# Schema Registry family: Avro serialize+produce and consume+deserialize in Python, odradek
# (release wheel) vs confluent-kafka's AvroSerializer/AvroDeserializer, interleaved in one run
# against one release `odradek-broker --schema-registry` (bench/schema_registry.py).
#
#   bench/schema_registry.sh [--messages N] [--rounds R]
#
# Installs the release wheel and schema-registry/peers.txt into target/bench-sr-venv and
# writes bench/results/schema_registry-<date>.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
nice -n 10 cargo build --release -q -p odradek-broker
VENV="$TARGET/bench-sr-venv"
if ! "$VENV/bin/pip" --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q -r schema-registry/peers.txt
(cd python && CARGO_TARGET_DIR="$TARGET/python-release" VIRTUAL_ENV="$VENV" nice -n 10 \
  "$VENV/bin/maturin" develop -q --release --manifest-path Cargo.toml)
mkdir -p bench/results
exec "$VENV/bin/python" bench/schema_registry.py --broker-bin "$TARGET/release/odradek-broker" \
  --json "bench/results/schema_registry-$(date +%F).json" "$@"
