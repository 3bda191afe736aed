#!/usr/bin/env bash
# Runs every test tier Odradek has, installing what the tiers need on a fresh machine.
#
#   ./scripts/test.sh           everything (this is what CI runs)
#   ODRADEK_SKIP_COMPAT=1 ...   skip the tiers that need third-party peers
#
# Tiers, in order: formatting and lints; Rust unit, property and integration tests; the
# compatibility tier (third-party decoders reading our output).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
# A run from a clean clone gains nothing from incremental compilation, whose caches would be
# the largest thing on the disk; set CARGO_INCREMENTAL=1 to keep them for repeated local runs.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

steps=0
# Each step's header carries the time since the start, so a slow tier shows in the log,
# and the space left on the target's disk, so a run that fills the disk says so before it fails.
free_space() { df -Ph "$root" 2>/dev/null | awk 'NR == 2 { print $4 }'; }
step() {
  steps=$((steps + 1))
  printf '\n== %s == [%dm%02ds, %s free]\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)) "$(free_space)"
}

step "toolchain"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo --version

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "layers: no import cycles, layer order kept, protocol messages only in client-core"
python3 scripts/check_layers.py client-core/src types error_code error alloc protocol records security \
  config net cluster producer consumer admin
python3 scripts/check_layers.py broker-ref/src log partition session coordinator security quota cluster handlers server testing
python3 scripts/check_layers.py --forbid-protocol-messages bindings python node c cli kotlin

if [[ -z "${ODRADEK_SKIP_COMPAT:-}" ]]; then
  # Installed before the Rust tests: the client suite's mixed-group and cross-client tests drive
  # a confluent-kafka (librdkafka) peer from this venv (they say "skipped" without it).
  step "peers: confluent-kafka and kafka-python venv (tests/compat/python-peers.sh)"
  py=$(tests/compat/python-peers.sh install)
fi

step "cargo test (unit, property, integration)"
cargo test --workspace

step "examples: broker + round trip (the README's main command, debug build)"
ODRADEK_PROFILE=debug ./scripts/demo.sh

# ---- Python package `odradek` (python/, bindings/): build into python/.venv, run python/tests ----
# (before the compat tier, which runs the same suite against Apache Kafka with this venv)
step "python: odradek package (maturin develop, debug) and pytest python/tests"
ODRADEK_BROKER_BIN="$target/debug/odradek-broker" python/test.sh
# ---- end of the Python package step ---------------------------------------------------------

if [[ -z "${ODRADEK_SKIP_COMPAT:-}" ]]; then
  step "compat: kafka-python decodes batches Odradek encoded"
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  cargo run -q -p odradek --example write_batches -- "$out"
  "$py" tests/compat/check_our_batches.py "$out"

  step "compat: confluent-kafka (librdkafka) and kafka-python against odradek-broker"
  ODRADEK_BROKER_BIN="$target/debug/odradek-broker" tests/compat/run_broker_peers.sh

  step "compat: matrix, fast subset (tests/compat/run --fast; full matrix: tests/compat/run)"
  tests/compat/run --fast

  step "compat: the client suite against Apache Kafka 4.x (jars from Maven Central)"
  kdir=$(mktemp -d)
  trap 'tests/compat/kafka.sh stop "$kdir" >/dev/null 2>&1 || true; rm -rf "$out" "$kdir"' EXIT
  # quota.window.num=2: the suite's quota rate tests (tests/suite/tests/quotas.rs) measure 20 s
  # against short quota windows. The group.consumer.* values: KIP-848 groups heartbeat every
  # 500 ms (Kafka's floor is 5 s), as the suite's own broker does (tests/suite/tests/groups_kip848.rs).
  kafka_props=$'quota.window.num=2\ngroup.consumer.heartbeat.interval.ms=500\ngroup.consumer.min.heartbeat.interval.ms=500\ngroup.consumer.session.timeout.ms=6000\ngroup.consumer.min.session.timeout.ms=6000'
  kafka_addr=$(ODRADEK_KAFKA_EXTRA_PROPS="$kafka_props" tests/compat/kafka.sh start "$kdir")
  ODRADEK_TEST_BOOTSTRAP="$kafka_addr" cargo test -p odradek-suite
  ODRADEK_TEST_BOOTSTRAP="$kafka_addr" cargo test -p odradek-eos
  # Broker fidelity: the same requests to a fresh odradek-broker and to this Kafka, answers
  # compared field by field (produce record errors, authorized operations, configs).
  ODRADEK_FIDELITY_KAFKA="$kafka_addr" ODRADEK_FIDELITY_BROKER_PROPS="$kafka_props" \
    cargo test -p odradek-broker --test fidelity_produce \
    --test fidelity_operations --test fidelity_configs -- --ignored
  ODRADEK_TEST_BOOTSTRAP="$kafka_addr" python/test.sh

  step "compat: the Node.js package's tests against Apache Kafka 4.x"
  ODRADEK_TEST_BOOTSTRAP="$kafka_addr" node/test.sh

  step "kotlin: odradek-kotlin (mvn verify: native lib, uniffi bindings, JUnit vs odradek-broker and Apache Kafka, and the cluster fault test on a 3-node Apache Kafka)"
  # ODRADEK_FAULT_CLUSTER=1: ClusterFaultsTest (the cluster tier's scenario below) runs in this
  # mvn run, which saves a second build of the package.
  ODRADEK_FAULT_CLUSTER=1 ODRADEK_TEST_KAFKA="$kafka_addr" ODRADEK_BROKER_BIN="$target/debug/odradek-broker" \
    kotlin/test.sh
  tests/compat/kafka.sh stop "$kdir"

  step "cluster: the client through node faults on a 3-node Apache Kafka (tests/cluster/kafka-cluster.sh) and on our 3-node cluster (scripts/cluster.sh)"
  # Leader kill, a pause past the broker session timeout, controller kill and a node cut off
  # from clients under an acks=all producer and a group; a transactional pipeline through
  # coordinator and leader kills; an unclean election's truncation reported to consumers.
  # Each test starts a cluster. On Apache Kafka these three (its JVMs take a while to start);
  # on ours also a consumer whose only bootstrap server dies, follower fetching by rack and
  # acks=all losing and regaining min.insync.replicas. The frozen-coordinator synchronous-commit
  # test, and the other three on Apache Kafka, run from the full command in docs/resilience.md
  # (CI's budget).
  cargo test -p odradek-suite --test cluster_faults -- --ignored --test-threads=1 \
    producer_and_group_survive a_transactional_pipeline consumers_detect_the_truncation
  ODRADEK_CLUSTER_CMD="$root/scripts/cluster.sh" ODRADEK_BROKER_BIN="$target/debug/odradek-broker" \
    ODRADEK_CLI_BIN="$target/debug/odradek" \
    cargo test -p odradek-suite --test cluster_faults -- --ignored --test-threads=1 \
    --skip synchronous_commits_keep_members
  ODRADEK_FAULT_CLUSTER=1 ODRADEK_BROKER_BIN="$target/debug/odradek-broker" \
    python/test.sh tests/test_cluster_faults.py
  ODRADEK_FAULT_CLUSTER=1 ODRADEK_BROKER_BIN="$target/debug/odradek-broker" \
    node/test.sh test/cluster_faults.test.js
fi

# ---- Node.js package `odradek` (node/, napi-rs): npm ci builds the addon, node --test node/test ---
step "node: odradek package (npm ci, cargo build) and node --test node/test"
ODRADEK_BROKER_BIN="$target/debug/odradek-broker" node/test.sh
# ---- end of the Node.js package step ------------------------------------------------------------

step "testing: the test cluster from a fresh pip install ./python and npm install ./node (tests/testing/fresh_install.sh)"
tests/testing/fresh_install.sh

# ---- Schema Registry (schema-registry/): Rust tier, confluent-kafka's and KafkaJS's registry ----
# clients and serializers against ours (its own venv with confluent-kafka[avro,json,protobuf])
step "schema registry: Rust, Python (confluent-kafka) and Node (@kafkajs/confluent-schema-registry) tiers"
schema-registry/test.sh
# ---- end of the Schema Registry step ------------------------------------------------------------

# ---- C library libodradek (c/): header check, C tests plain / valgrind / ASan, examples ------
step "c: libodradek (odradek.h check, C tests plain + valgrind + AddressSanitizer, examples, install)"
ODRADEK_BROKER_BIN="$target/debug/odradek-broker" c/test.sh
if [[ -z "${ODRADEK_SKIP_COMPAT:-}" ]]; then
  # After c/test.sh, which installs the C toolchain on a fresh machine.
  step "cluster: libodradek through node faults on a 3-node Apache Kafka (c/test_cluster_faults.sh)"
  c/test_cluster_faults.sh
fi
# ---- end of the C library step --------------------------------------------------------------

# ---- Security: our clients against a secured Apache Kafka and a secured odradek-broker; the
# broker's negative cases; third-party clients and the ACL table on both brokers ----------------
if [[ -z "${ODRADEK_SKIP_COMPAT:-}" ]]; then
  step "security: the clients over SSL, mTLS, SASL_SSL and SASL_PLAINTEXT against Apache Kafka (tests/security/client.sh kafka)"
  tests/security/client.sh kafka
  step "security: odradek-broker's TLS/SASL/ACL tests, our clients and third-party clients against it (tests/security/run.sh)"
  ODRADEK_BROKER_BIN="$target/debug/odradek-broker" tests/security/run.sh
fi
# ---- end of the client security step --------------------------------------------------------

# Every step above exits the script on failure, so reaching here means all of them passed.
printf '\ntiers: %d passed, 0 failed\n' "$steps"
