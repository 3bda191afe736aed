#!/usr/bin/env bash
# Produce and consume over TLS: odradek vs librdkafka (rdkafka crate, librdkafka with the system
# OpenSSL), each over PLAINTEXT and SSL against one odradek-broker (release) that has both
# listeners on the same port pair for the whole run, interleaved, unattended (~5 min).
#
#   bench/client/run_tls.sh     build (release), run, write bench/client/results/tls-<date>.jsonl,
#                               print the tables of BENCHMARKS.md's "Client over TLS" section
#
# TLS: certificates from tests/security/certs.sh (EC P-256 broker key), server certificate
# verified against the test CA with hostname checking (both clients' defaults), TLS 1.3.
# Every run checks that all records were delivered (produce) or read (consume).
#
# Environment (all optional): REPEATS=5, COUNT_100=1000000, COUNT_1K=300000,
# BENCH_TMP=/dev/shm (broker data in memory when there is room).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
REPEATS="${REPEATS:-5}"
COUNT_100="${COUNT_100:-1000000}"
COUNT_1K="${COUNT_1K:-300000}"
REL="${CARGO_TARGET_DIR:-$ROOT/target}/release"
BENCH_REL="${CARGO_TARGET_DIR:-$HERE/target}/release"
log() { printf 'run_tls.sh: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
source "$HERE/lib.sh"

log "cargo build --release (bench/client) and -p odradek-broker"
(cd "$HERE" && cargo build --release --quiet --bin odradek-bench --bin consume) >&2
(cd "$ROOT" && cargo build --release --quiet -p odradek-broker) >&2

pick_bench_tmp
WORK="$(mktemp -d "$BENCH_TMP/odradek-tls-bench.XXXXXX")"
cp "$REL/odradek-broker" "$BENCH_REL/odradek-bench" "$BENCH_REL/consume" "$WORK/"
BROKER_PID=""
cleanup() {
  if [[ -n "$BROKER_PID" ]]; then kill -TERM "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$ROOT/tests/security/certs.sh" "$WORK/pki" >&2
CA="$WORK/pki/ca.pem"
mkdir -p "$WORK/data"
"$WORK/odradek-broker" --override "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0" \
  --override "log.dirs=$WORK/data" --override ssl.keystore.type=PEM \
  --override "ssl.keystore.location=$WORK/pki/broker-keystore.pem" \
  >"$WORK/broker.out" 2>"$WORK/broker.err" &
BROKER_PID=$!
for _ in $(seq 100); do grep -q 'listener SSL' "$WORK/broker.out" 2>/dev/null && break; sleep 0.1; done
PLAIN="$(awk '/listener PLAINTEXT/ {print $5}' "$WORK/broker.out")"
SSL="$(awk '/listener SSL/ {print $5}' "$WORK/broker.out")"
[[ -n "$PLAIN" && -n "$SSL" ]] || { cat "$WORK/broker.err" >&2; log "broker did not start"; exit 1; }
log "broker: PLAINTEXT $PLAIN, SSL $SSL"

props() { # protocol -> --property flags
  if [[ "$1" == SSL ]]; then
    printf '%s\n' --property security.protocol=SSL --property "ssl.ca.location=$CA"
  fi
}
addr() { if [[ "$1" == SSL ]]; then echo "$SSL"; else echo "$PLAIN"; fi; }

OUT="$HERE/results/tls-$(date +%Y-%m-%d).jsonl"
mkdir -p "$HERE/results"
: >"$OUT"
printf '{"meta":true,"date":"%s","git_rev":"%s","nproc":%s,"repeats":%s,"versions":%s}\n' \
  "$(date +%Y-%m-%d)" "$(git -C "$ROOT" rev-parse --short HEAD)" "$(nproc)" "$REPEATS" \
  "$("$WORK/odradek-bench" version)" >>"$OUT"

# Produce scenarios: name size count. Each run writes its own fresh topic.
PRODUCE=("100B-acks1-none-p1 100 $COUNT_100" "1KiB-acks1-none-p1 1024 $COUNT_1K")
n=0
for s in "${PRODUCE[@]}"; do
  read -r name size count <<<"$s"
  for rep in $(seq 0 "$REPEATS"); do
    for proto in PLAINTEXT SSL; do
      for client in odradek rdkafka; do
        n=$((n + 1))
        topic="tls-$name-$client-$proto-$rep"
        "$WORK/odradek-bench" create-topic --bootstrap "$PLAIN" --topic "$topic" --partitions 1
        mapfile -t extra < <(props "$proto")
        line="$("$WORK/odradek-bench" produce --client "$client" --bootstrap "$(addr "$proto")" \
          --topic "$topic" --count "$count" --size "$size" --acks 1 --compression none "${extra[@]}")"
        printf '%s\n' "${line%\}},\"phase\":\"produce\",\"scenario\":\"$name\",\"protocol\":\"$proto\",\"repeat\":$rep,\"warmup\":$([[ $rep == 0 ]] && echo true || echo false)}" >>"$OUT"
        log "produce $name $proto $client #$rep: $(python3 -c 'import json,sys; print("%.0f msgs/s" % json.loads(sys.argv[1])["msgs_per_s"])' "$line")"
        "$WORK/odradek-bench" delete-topic --bootstrap "$PLAIN" --topic "$topic"
      done
    done
  done
done

# Consume scenarios: one topic each, filled once over PLAINTEXT, read from the beginning by every run.
for s in "${PRODUCE[@]}"; do
  read -r name size count <<<"$s"
  topic="tls-consume-$name"
  "$WORK/odradek-bench" create-topic --bootstrap "$PLAIN" --topic "$topic" --partitions 1
  "$WORK/odradek-bench" produce --client odradek --bootstrap "$PLAIN" --topic "$topic" \
    --count "$count" --size "$size" --acks all --compression none >/dev/null
  for rep in $(seq 0 "$REPEATS"); do
    for proto in PLAINTEXT SSL; do
      for client in odradek rdkafka; do
        mapfile -t extra < <(props "$proto")
        line="$("$WORK/consume" --client "$client" --bootstrap "$(addr "$proto")" --topic "$topic" "${extra[@]}")"
        printf '%s\n' "${line%\}},\"phase\":\"consume\",\"scenario\":\"$name\",\"protocol\":\"$proto\",\"repeat\":$rep,\"warmup\":$([[ $rep == 0 ]] && echo true || echo false)}" >>"$OUT"
        log "consume $name $proto $client #$rep: $(python3 -c 'import json,sys; print("%.0f msgs/s" % json.loads(sys.argv[1])["msgs_per_s"])' "$line")"
      done
    done
  done
done
log "results in $OUT"
python3 "$HERE/report_tls.py" "$OUT"
