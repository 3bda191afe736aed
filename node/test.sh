#!/usr/bin/env bash
# Builds the odradek npm package (node/) from source and runs its tests, `node --test test/`,
# against a real odradek-broker. Called by scripts/test.sh; safe to run by hand.
#
#   node/test.sh [node --test args...]       every test
#   node/test.sh test/x.test.js [args...]     only that file
#
# From a fresh clone: `npm ci` installs the pinned dev dependencies (kafkajs, @platformatic/kafka,
# typescript, @napi-rs/cli) and runs the package's install script, which builds the addon with
# cargo (debug profile here, into the workspace's target/) and installs it as node/odradek.node.
#
# Environment:
#   ODRADEK_TEST_BOOTSTRAP   run against this broker (host:port) instead of starting
#                            odradek-broker, e.g. Apache Kafka in the compatibility tier
#   ODRADEK_BROKER_BIN       broker binary (default: target/debug/odradek-broker, built here)
#   ODRADEK_NODE_PROFILE     cargo profile of the addon (default here: debug)
#   CARGO_TARGET_DIR         honoured
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/.." && pwd -P)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

log() { printf 'node/test.sh: %s\n' "$*" >&2; }

command -v node >/dev/null || { log "node (20+) is required"; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
if (( major < 20 )); then
  log "node 20+ is required (found $(node --version))"
  exit 1
fi

export ODRADEK_NODE_PROFILE="${ODRADEK_NODE_PROFILE:-debug}"
log "npm ci (builds the addon with cargo, $ODRADEK_NODE_PROFILE)"
(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error </dev/null >&2)

if [[ -z "${ODRADEK_TEST_BOOTSTRAP:-}" && -z "${ODRADEK_BROKER_BIN:-}" ]]; then
  export ODRADEK_BROKER_BIN="$TARGET/debug/odradek-broker"
  (cd "$ROOT" && cargo build -q -p odradek-broker)
fi
if [[ -n "${ODRADEK_TEST_BOOTSTRAP:-}" ]]; then
  log "running against $ODRADEK_TEST_BOOTSTRAP"
fi

cd "$HERE"
export KAFKAJS_NO_PARTITIONER_WARNING=1
if [[ $# -gt 0 && -f "$1" ]]; then
  # `node/test.sh test/x.test.js [more files or args]`: only those tests.
  exec node --test --test-timeout=600000 "$@"
fi
exec node --test --test-timeout=600000 "$@" test/*.test.js
