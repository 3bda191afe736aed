#!/usr/bin/env bash
# The test cluster from a fresh install, as an application's project gets it:
#
#   tests/testing/fresh_install.sh          Python and Node
#   tests/testing/fresh_install.sh python   one of them
#
# Python: a new venv in an empty project directory, `pip install <repo>/python pytest
# confluent-kafka` (nothing else), then pytest runs examples/python/test_commit_retry.py (odradek
# as the client) and a round trip with confluent_kafka as the client through a refused Produce
# (the same fixtures; see test_testing.py for why not the commit example). The kafka_cluster
# fixture must come from the installed package's pytest11 entry point: the project has no
# conftest.py and pytest is asked to list the plugin.
# Node: an empty project, `npm install <repo>/node kafkajs`, then node --test runs
# examples/node/commit_retry.test.js with odradek and with kafkajs as the client.
# The packages build from source here (debug profile, the repository's target directories, so
# a second run is incremental).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
which="${1:-all}"
log() { printf '\n== tests/testing/fresh_install.sh: %s ==\n' "$*" >&2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [[ "$which" == all || "$which" == python ]]; then
  log "python: pip install ./python pytest confluent-kafka into a new venv"
  project="$work/py-app"
  mkdir -p "$project"
  python3 -m venv "$project/.venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 MATURIN_PEP517_ARGS="--profile dev" \
    CARGO_TARGET_DIR="$TARGET/python" \
    "$project/.venv/bin/pip" install -q --no-input "$ROOT/python" pytest confluent-kafka </dev/null >&2
  cp "$ROOT/examples/python/test_commit_retry.py" "$project/test_commit_retry.py"
  # confluent-kafka as the client: a round trip through the plugin's fixtures and a refused
  # Produce it must retry (the commit-retry example itself can hit a librdkafka livelock on
  # repeated COORDINATOR_NOT_AVAILABLE; see python/tests/test_testing.py).
  cat >"$project/test_confluent.py" <<'PY'
from confluent_kafka import Consumer, Producer, TopicPartition


def test_round_trip_through_a_refused_produce(kafka_cluster, kafka_bootstrap):
    kafka_cluster.create_topic("orders", 1)
    kafka_cluster.record_requests(True)
    kafka_cluster.push_request_errors("Produce", ["NOT_LEADER_OR_FOLLOWER"])
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce("orders", value=b"order-0")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "g",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("orders", 0, 0)])
    msg = None
    for _ in range(100):
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            break
    consumer.close()
    assert msg is not None and msg.value() == b"order-0"
    produces = [r.error for r in kafka_cluster.requests() if r.api_name == "Produce"]
    assert produces[:2] == ["NOT_LEADER_OR_FOLLOWER", None]
PY
  cd "$project"
  # The plugin is found through the entry point alone (no conftest.py, no -p flag).
  "$project/.venv/bin/python" -m pytest --trace-config --co -q -p no:cacheprovider >"$work/plugins" 2>&1 || true
  grep -q "odradek.testing.pytest_plugin" "$work/plugins" \
    || { echo "odradek's pytest plugin was not loaded" >&2; tail -20 "$work/plugins" >&2; exit 1; }
  log "python: pytest (odradek and confluent-kafka as the client)"
  "$project/.venv/bin/python" -m pytest -q -p no:cacheprovider test_commit_retry.py test_confluent.py
  cd "$ROOT"
fi

if [[ "$which" == all || "$which" == node ]]; then
  log "node: npm install ./node kafkajs into an empty project"
  project="$work/node-app"
  mkdir -p "$project"
  (cd "$project" && npm init -y >/dev/null \
    && ODRADEK_NODE_PROFILE=debug npm install --no-audit --no-fund --loglevel=error \
      "$ROOT/node" kafkajs@2.2.4 </dev/null >&2)
  cp "$ROOT/examples/node/commit_retry.test.js" "$project/"
  log "node: node --test (odradek and kafkajs as the client)"
  (cd "$project" && node --test commit_retry.test.js \
    && KAFKA_CLIENT=kafkajs KAFKAJS_NO_PARTITIONER_WARNING=1 node --test commit_retry.test.js)
fi
log "passed"
