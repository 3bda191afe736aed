#!/usr/bin/env bash
# Failover benchmark (issue 27): producer and consumer gaps after a partition leader's SIGKILL
# on a 3-node Apache Kafka (tests/cluster/kafka-cluster.sh), odradek's Python package and
# librdkafka (confluent-kafka) and the Java client side by side on the same faults. See
# bench/failover.py (the Java worker: bench/FailoverWorker.java, compiled at the start).
#
#   bench/failover.sh [failover.py args...]     e.g. --rounds 5 --rate 500 --after 20
#   bench/failover.sh --cluster-cmd scripts/cluster.sh   the same on odradek-broker's own 3-node
#                                               cluster (release broker: cargo build --release)
#
# Installs ./python (release wheel) and the peers (tests/compat/python-peers.txt) into
# target/bench-venv, as bench/python.sh does, and writes bench/results/failover-<date>.json.
# About 1 min per round after the install.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
# shellcheck source=bench/bench-venv.sh
source "$ROOT/bench/bench-venv.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/failover-XXXXXX")"
trap 'tests/cluster/kafka-cluster.sh stop "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -p bench/results
"$VENV/bin/python" bench/failover.py --workdir "$work" \
  --json "bench/results/failover-$(date +%F).json" "$@"
