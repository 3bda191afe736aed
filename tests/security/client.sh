#!/usr/bin/env bash
# The client security tier: Odradek's clients (Rust, Python, Node, C) over TLS and SASL against
# an Apache Kafka 4.x with secured listeners, certificates made here at run time.
#
#   tests/security/client.sh        all languages (the test command runs this)
#
# Steps: tests/security/certs.sh makes a PKI in a temporary directory; tests/compat/kafka.sh
# starts Kafka with ODRADEK_KAFKA_SECURE (SSL, MTLS, SASL_SSL and SASL_PLAINTEXT listeners,
# users alice/admin, 3 s SASL_PLAINTEXT sessions); then each language's security tests run with
# ODRADEK_SECURITY_LISTENERS (a NAME=host:port file) and ODRADEK_SECURITY_PKI. Kafka is stopped
# at the end, whatever happens.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
log() { printf '\n== tests/security/client.sh: %s ==\n' "$*" >&2; }

WORK="$(mktemp -d)"
KDIR="$WORK/kafka"
cleanup() {
  "$ROOT/tests/compat/kafka.sh" stop "$KDIR" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

log "certificates"
"$HERE/certs.sh" "$WORK/pki"
log "Apache Kafka with secured listeners"
plaintext="$(ODRADEK_KAFKA_SECURE="$WORK/pki" "$ROOT/tests/compat/kafka.sh" start "$KDIR")"
cp "$KDIR/listeners.env" "$WORK/listeners.env"
echo "PLAINTEXT=$plaintext" >>"$WORK/listeners.env"
export ODRADEK_SECURITY_LISTENERS="$WORK/listeners.env"
export ODRADEK_SECURITY_PKI="$WORK/pki"
cat "$WORK/listeners.env" >&2

log "rust: cargo test -p odradek-suite --test security --test security_admin"
(cd "$ROOT" && cargo test -q -p odradek-suite --test security --test security_admin)

log "python: python/tests/test_security.py"
ODRADEK_SKIP_COMPAT=1 "$ROOT/python/test.sh" tests/test_security.py

log "node: node/test/security.test.js"
if [[ ! -f "$ROOT/node/odradek.node" ]]; then
  (cd "$ROOT/node" && ODRADEK_NODE_PROFILE=debug npm ci --no-audit --no-fund --loglevel=error </dev/null >&2)
fi
(cd "$ROOT/node" && KAFKAJS_NO_PARTITIONER_WARNING=1 node --test test/security.test.js)

log "c: c/tests/test_security.c"
make -s -C "$ROOT/c" PROFILE=debug all >&2
"$ROOT/c/build/debug/tests/test_security"
log "passed"
