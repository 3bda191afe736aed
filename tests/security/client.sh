#!/usr/bin/env bash
# The client security tier: Odradek's clients (Rust, Python, Node, C) over TLS and SASL against
# a secured broker, certificates made here at run time.
#
#   tests/security/client.sh            against Apache Kafka 4.x (the default)
#   tests/security/client.sh odradek    against a secured odradek-broker (tests/security/with_odradek.py)
#   tests/security/client.sh both       one after the other (the test command runs this)
#
# Steps: tests/security/certs.sh makes a PKI in a temporary directory; the broker starts with
# SSL, MTLS, SASL_SSL and SASL_PLAINTEXT listeners, users alice/admin, 3 s SASL_PLAINTEXT sessions
# (Kafka: tests/compat/kafka.sh with ODRADEK_KAFKA_SECURE; ours: the same listeners, users and
# authorizer from conftest.py); then each language's security tests run with
# ODRADEK_SECURITY_LISTENERS (a NAME=host:port file) and ODRADEK_SECURITY_PKI. The broker is
# stopped at the end, whatever happens.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
log() { printf '\n== tests/security/client.sh: %s ==\n' "$*" >&2; }

# The tests of every language, against the broker named by ODRADEK_SECURITY_LISTENERS.
languages() {
  log "rust: cargo test -p odradek-suite --test security --test security_admin"
  (cd "$ROOT" && cargo test -q -p odradek-suite --test security --test security_admin)

  log "python: python/tests/test_security.py, test_security_admin.py"
  ODRADEK_SKIP_COMPAT=1 "$ROOT/python/test.sh" tests/test_security.py tests/test_security_admin.py

  log "node: node/test/security.test.js, security_admin.test.js"
  if [[ ! -f "$ROOT/node/odradek.node" ]]; then
    (cd "$ROOT/node" && ODRADEK_NODE_PROFILE=debug npm ci --no-audit --no-fund --loglevel=error </dev/null >&2)
  fi
  (cd "$ROOT/node" && KAFKAJS_NO_PARTITIONER_WARNING=1 node --test test/security.test.js test/security_admin.test.js)

  log "c: c/tests/test_security.c"
  make -s -C "$ROOT/c" PROFILE=debug all >&2
  "$ROOT/c/build/debug/tests/test_security"
}

mode="${1:-kafka}"
case "$mode" in
  --languages) languages; exit 0 ;;
  both) "$0" kafka; "$0" odradek; exit 0 ;;
  kafka|odradek) ;;
  *) echo "usage: $0 [kafka|odradek|both]" >&2; exit 2 ;;
esac

WORK="$(mktemp -d)"
KDIR="$WORK/kafka"
cleanup() {
  "$ROOT/tests/compat/kafka.sh" stop "$KDIR" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

log "certificates"
"$HERE/certs.sh" "$WORK/pki"
if [[ "$mode" == odradek ]]; then
  log "odradek-broker with secured listeners"
  if [[ -z "${ODRADEK_BROKER_BIN:-}" ]]; then
    (cd "$ROOT" && nice -n 10 cargo build -q -p odradek-broker)
    export ODRADEK_BROKER_BIN="$ROOT/target/debug/odradek-broker"
  fi
  openssl pkcs8 -topk8 -in "$WORK/pki/broker.key" -v2 aes-256-cbc -passout pass:broker-key-pw \
    -out "$WORK/pki/broker-encrypted.key" 2>/dev/null
  py="$("$ROOT/tests/compat/python-peers.sh" install)"
  "$py" "$HERE/with_odradek.py" "$WORK/pki" "$WORK/odradek" -- "$0" --languages
  log "passed (odradek-broker)"
  exit 0
fi
log "Apache Kafka with secured listeners"
plaintext="$(ODRADEK_KAFKA_SECURE="$WORK/pki" "$ROOT/tests/compat/kafka.sh" start "$KDIR")"
cp "$KDIR/listeners.env" "$WORK/listeners.env"
echo "PLAINTEXT=$plaintext" >>"$WORK/listeners.env"
export ODRADEK_SECURITY_LISTENERS="$WORK/listeners.env"
export ODRADEK_SECURITY_PKI="$WORK/pki"
cat "$WORK/listeners.env" >&2
languages
log "passed (Apache Kafka)"
