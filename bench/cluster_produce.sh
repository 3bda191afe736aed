#!/usr/bin/env bash
# acks=all produce throughput and latency on a 3-node cluster: odradek-broker's own
# (scripts/cluster.sh) next to Apache Kafka's (tests/cluster/kafka-cluster.sh), one interleaved
# run with Kafka's ProducerPerformance as the client of both (issue 17). See
# bench/cluster_produce.py for the method. About 15 minutes on 2 cores with the defaults.
#
#   bench/cluster_produce.sh [--repeats N] [--records N] [--rate R] [--latency-seconds S]
#
# Writes bench/results/cluster_produce-<date>.json. Environment: ODRADEK_BROKER_BIN (default:
# target/release/odradek-broker, built here), ODRADEK_KAFKA_HEAP (per Kafka node, default
# "-Xmx384m -Xms64m").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [[ -z "${ODRADEK_BROKER_BIN:-}" ]]; then
  cargo build --release -q -p odradek-broker
  export ODRADEK_BROKER_BIN="$TARGET/release/odradek-broker"
fi
# confluent-kafka (topic creation, high watermarks) from the compatibility tier's venv.
py="$(tests/compat/python-peers.sh install)"
tests/compat/kafka.sh install >&2
work="$(mktemp -d "${TMPDIR:-/tmp}/cluster-produce-XXXXXX")"
trap 'ODRADEK_CLUSTER_DIRECT=1 scripts/cluster.sh stop "$work/odradek" >/dev/null 2>&1 || true
      tests/cluster/kafka-cluster.sh stop "$work/kafka" >/dev/null 2>&1 || true
      rm -rf "$work"' EXIT
mkdir -p bench/results
"$py" bench/cluster_produce.py --workdir "$work" \
  --json "bench/results/cluster_produce-$(date +%F).json" "$@"
