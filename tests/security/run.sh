#!/usr/bin/env bash
# The security tiers end to end, installing what they need on a fresh machine:
#
#   tests/security/run.sh                  Rust integration tests + the third-party table on
#                                          odradek-broker and Apache Kafka 4.4
#   ODRADEK_SECURITY_BROKERS=odradek ...   only odradek-broker (no JVM broker)
#   tests/security/run.sh -k acl           extra arguments go to pytest
#
# Steps: peers (python-peers.sh venv with confluent-kafka and kafka-python; kafka.sh install for
# the Kafka jars and the Java client; kafkajs 2.2.4 into tests/security/.cache/node), the broker
# (ODRADEK_BROKER_BIN, or `cargo build -p odradek-broker`), `cargo test -p odradek-broker --test
# security` (TLS/SASL/ACL negative cases byte by byte), Odradek's own clients' security tests in
# every language (written against Kafka) against a secured odradek-broker (`client.sh odradek`),
# then pytest over tests/security (one
# scenario table per broker: round trips per listener and mechanism for confluent-kafka,
# kafka-python, kafkajs and the Java client; negative cases; the ACL table). PKI: certs.sh,
# made at test time. Exit status: non-zero if any step fails.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
cd "$ROOT"
log() { printf '\n== security: %s ==\n' "$*"; }

log "peers"
py="$(tests/compat/python-peers.sh install)"
brokers="${ODRADEK_SECURITY_BROKERS:-odradek,kafka}"
tests/compat/kafka.sh install
mkdir -p "$HERE/.cache/node"
if ! cmp -s "$HERE/package.json" "$HERE/.cache/node/package.json" || [[ ! -d "$HERE/.cache/node/node_modules/kafkajs" ]]; then
  cp "$HERE/package.json" "$HERE/.cache/node/package.json"
  (cd "$HERE/.cache/node" && npm install --no-audit --no-fund --loglevel=error)
fi

log "odradek-broker"
if [[ -z "${ODRADEK_BROKER_BIN:-}" ]]; then
  nice -n 10 cargo build -q -p odradek-broker
  export ODRADEK_BROKER_BIN="$ROOT/target/debug/odradek-broker"
fi

log "Rust: cargo test -p odradek-broker --test security"
nice -n 10 cargo test -q -p odradek-broker --test security

log "Odradek's own clients (Rust, Python, Node, C; their security tests, written against Kafka) against a secured odradek-broker"
"$HERE/client.sh" odradek

log "third-party clients on: $brokers"
export ODRADEK_SECURITY_BROKERS="$brokers"
cd "$HERE"
set +e
"$py" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning test_clients.py test_other_clients.py test_acl_table.py "$@"
rc=$?
set -e
exit "$rc"
