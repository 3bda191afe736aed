#!/usr/bin/env bash
# Builds the release addon and broker, installs the peers (kafkajs, @platformatic/kafka, pinned
# in node/package-lock.json; @confluentinc/kafka-javascript, built once into
# bench/node/.cache/confluent-js by install_confluent_js.sh) and runs bench.mjs, which also
# writes bench/node/results/node-<date>.json. Arguments go to bench.mjs.
#
#   bench/node/run.sh [--messages N] [--rounds R] ...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build -q --release -p odradek-broker -p odradek-node)
(cd "$root/node" && ODRADEK_NODE_SKIP_BUILD=1 npm ci --no-audit --no-fund --loglevel=error </dev/null >&2)
confluent_js="$("$root/bench/node/install_confluent_js.sh")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$target/release/libodradek_node.so" "$work/odradek.node"
mkdir -p "$root/bench/node/results"
ODRADEK_NODE_ADDON="$work/odradek.node" ODRADEK_BROKER_BIN="$target/release/odradek-broker" \
  ODRADEK_CONFLUENT_JS_DIR="$confluent_js" \
  KAFKAJS_NO_PARTITIONER_WARNING=1 node "$root/bench/node/bench.mjs" \
  --json "$root/bench/node/results/node-$(date +%F).json" "$@"
