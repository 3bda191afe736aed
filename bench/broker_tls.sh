#!/usr/bin/env bash
# Broker over TLS: confluent-kafka producing / consuming over PLAINTEXT and SSL against
# odradek-broker (release) and Apache Kafka 4.4, interleaved in one run (~5 min on 2 cores).
# Method: bench/broker_tls.py. Writes bench/results/broker_tls-<date>.json and prints the table
# (BENCHMARKS.md "Broker over TLS").
#
#   bench/broker_tls.sh
#   ODRADEK_BENCH_ARGS="--records 200000 --rounds 5" bench/broker_tls.sh
#   ODRADEK_BROKER_BIN=/path/to/odradek-broker bench/broker_tls.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
log() { printf 'broker_tls.sh: %s\n' "$*" >&2; }
py="$("$ROOT/tests/compat/python-peers.sh" install)"
"$ROOT/tests/compat/kafka.sh" install
if [[ -z "${ODRADEK_BROKER_BIN:-}" ]]; then
  (cd "$ROOT" && nice -n 10 cargo build -q --release -p odradek-broker)
  ODRADEK_BROKER_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/odradek-broker"
fi
work="$(mktemp -d)"
kdir="$work/kafka"
cleanup() {
  [[ -n "${opid:-}" ]] && kill "$opid" 2>/dev/null && wait "$opid" 2>/dev/null
  "$ROOT/tests/compat/kafka.sh" stop "$kdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$ROOT/tests/security/certs.sh" "$work/pki"
pki="$work/pki"

log "odradek-broker (PLAINTEXT + SSL)"
"$ODRADEK_BROKER_BIN" --override "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0" \
  --override "log.dirs=$work/odradek" --override ssl.keystore.type=PEM \
  --override "ssl.keystore.location=$pki/broker-keystore.pem" >"$work/odradek.out" 2>"$work/odradek.err" &
opid=$!
for _ in $(seq 100); do grep -q 'listener SSL' "$work/odradek.out" 2>/dev/null && break; sleep 0.1; done
o_plain="$(awk '/listener PLAINTEXT/ {print $5}' "$work/odradek.out")"
o_ssl="$(awk '/listener SSL/ {print $5}' "$work/odradek.out")"

log "Apache Kafka 4.4 (PLAINTEXT + SSL)"
k_plain="$(ODRADEK_KAFKA_SECURE="$pki" "$ROOT/tests/compat/kafka.sh" start "$kdir")"
k_ssl="$(sed -n 's/^SSL=//p' "$kdir/listeners.env")"

mkdir -p "$ROOT/bench/results"
out="$ROOT/bench/results/broker_tls-$(date +%Y%m%d).json"
endpoints="{\"odradek\": {\"PLAINTEXT\": \"$o_plain\", \"SSL\": \"$o_ssl\"}, \"kafka\": {\"PLAINTEXT\": \"$k_plain\", \"SSL\": \"$k_ssl\"}}"
# shellcheck disable=SC2086
"$py" "$ROOT/bench/broker_tls.py" --endpoints "$endpoints" --ca "$pki/ca.pem" --out "$out" ${ODRADEK_BENCH_ARGS:-}
log "results: $out"
