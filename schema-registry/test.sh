#!/usr/bin/env bash
# Runs every tier of the Schema Registry against real components, installing what they need:
#
#   1. Rust: unit tests and the registry's integration tests (scenario table with Confluent's
#      error codes, bad input, basic auth, ids across registry and broker restarts, the serde
#      module through Kafka) against an in-process odradek-broker;
#   2. Python: python/tests/test_schema_registry.py in schema-registry/.venv, which has
#      confluent-kafka with its schema-registry extras (peers.txt): both clients run one
#      scenario table, records cross between confluent-kafka's serializers and ours;
#   3. Node: node/test/schema_registry.test.js, with @kafkajs/confluent-schema-registry;
#   4. with ODRADEK_SR_KAFKA=1 (or ODRADEK_TEST_BOOTSTRAP set): tiers 1-2 against Apache
#      Kafka 4.x (tests/compat/kafka.sh), so the registry keeps its ids across restarts there too.
#
#   schema-registry/test.sh            tiers 1-3 (52 s here once built)
#   ODRADEK_SR_KAFKA=1 schema-registry/test.sh    also tier 4
#
# Environment: CARGO_TARGET_DIR honoured; ODRADEK_PYTHON (python3) builds the venv.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/.." && pwd -P)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$HERE/.venv"
PY="$VENV/bin/python"
STAMP="$VENV/.odradek-stamp"
log() { printf '\n== schema-registry/test.sh: %s ==\n' "$*" >&2; }

log "cargo build (broker, registry)"
(cd "$ROOT" && nice -n 10 cargo build -q -p odradek-broker -p odradek-schema-registry)
export ODRADEK_BROKER_BIN="$TARGET/debug/odradek-broker"
export ODRADEK_SCHEMA_REGISTRY_BIN="$TARGET/debug/odradek-schema-registry"

log "rust: cargo test -p odradek-schema-registry"
(cd "$ROOT" && nice -n 10 cargo test -q -p odradek-schema-registry)

log "python: venv with confluent-kafka[avro,json,protobuf] ($VENV)"
if [[ ! -x "$PY" ]]; then
  "${ODRADEK_PYTHON:-python3}" -m venv "$VENV" </dev/null
fi
wanted="$({ "$PY" -c 'import sys; print(sys.version)'; cat "$HERE/peers.txt"; } | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$wanted" ]]; then
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -q --no-input -r "$HERE/peers.txt" </dev/null >&2
  printf '%s\n' "$wanted" >"$STAMP"
fi
(cd "$ROOT/python" && CARGO_TARGET_DIR="$TARGET/python" VIRTUAL_ENV="$VENV" nice -n 10 \
  "$VENV/bin/maturin" develop -q --manifest-path "$ROOT/python/Cargo.toml" </dev/null >&2)
(cd "$ROOT/python" && "$PY" -m pytest -q -p no:cacheprovider tests/test_schema_registry.py)

log "node: odradek/schema-registry and @kafkajs/confluent-schema-registry"
(cd "$ROOT/node" && ODRADEK_NODE_PROFILE=debug nice -n 10 npm ci --no-audit --no-fund --loglevel=error </dev/null >&2)
(cd "$ROOT/node" && node --test --test-timeout=120000 test/schema_registry.test.js)

if [[ -n "${ODRADEK_SR_KAFKA:-}" || -n "${ODRADEK_TEST_BOOTSTRAP:-}" ]]; then
  kdir=""
  if [[ -z "${ODRADEK_TEST_BOOTSTRAP:-}" ]]; then
    kdir=$(mktemp -d)
    trap '"$ROOT/tests/compat/kafka.sh" stop "$kdir" || true; rm -rf "$kdir"' EXIT
    log "Apache Kafka 4.x (tests/compat/kafka.sh)"
    ODRADEK_TEST_BOOTSTRAP=$("$ROOT/tests/compat/kafka.sh" start "$kdir")
    export ODRADEK_TEST_BOOTSTRAP
  fi
  log "rust and python tiers against Apache Kafka at $ODRADEK_TEST_BOOTSTRAP"
  (cd "$ROOT" && nice -n 10 cargo test -q -p odradek-schema-registry --test registry)
  (cd "$ROOT/python" && "$PY" -m pytest -q -p no:cacheprovider tests/test_schema_registry.py)
fi
log "all tiers passed"
