#!/usr/bin/env bash
# Rebalance time: odradek's consumer next to librdkafka's (rdkafka crate, vendored librdkafka) and
# the Java client's (Kafka's jars from tests/compat/kafka.sh, member bench/RebalanceMember.java),
# same broker, same run, interleaved. Times a member leaving and a member joining a settled group
# under a live producer, until every partition is owned (balanced) and until every partition is
# fetching again (bench/client/src/bin/rebalance.rs says exactly what is measured), for eager
# (range) and cooperative-sticky classic groups and KIP-848's consumer protocol (strategy
# `consumer`). The brokers heartbeat consumer-protocol members every 500 ms, the classic members'
# own setting (group.consumer.heartbeat.interval.ms=500).
#
#   bench/client/run_rebalance.sh                  a fresh odradek-broker (release build), then
#                                                  Apache Kafka 4.4 (tests/compat/kafka.sh)
#   BROKERS=odradek bench/client/run_rebalance.sh  only one of them
#   BOOTSTRAP=host:port bench/client/run_rebalance.sh   a running broker instead
#
# Environment: REPEATS (default 7), MEMBERS (3), PARTITIONS (12), STRATEGIES
# (range,cooperative-sticky,consumer), CLIENTS (odradek,rdkafka,java), BROKERS (odradek,kafka).
# Writes bench/client/results/rebalance-<date>-<broker>.jsonl and prints a summary table
# (medians) per broker.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
REPEATS="${REPEATS:-7}"
MEMBERS="${MEMBERS:-3}"
PARTITIONS="${PARTITIONS:-12}"
CLIENTS="${CLIENTS:-odradek,rdkafka,java}"
BROKERS="${BROKERS:-odradek,kafka}"
REL="${CARGO_TARGET_DIR:-$ROOT/target}/release"
BENCH_REL="${CARGO_TARGET_DIR:-$HERE/target}/release"
KAFKA_SH="$ROOT/tests/compat/kafka.sh"
# Both brokers: consumer-protocol heartbeats every 500 ms, and no initial rebalance delay.
GROUP_PROPS=(group.initial.rebalance.delay.ms=0 group.consumer.heartbeat.interval.ms=500
  group.consumer.min.heartbeat.interval.ms=500)
log() { printf 'run_rebalance.sh: %s\n' "$*" >&2; }

(cd "$HERE" && cargo build --release --quiet --bin rebalance) >&2
(cd "$ROOT" && cargo build --release --quiet -p odradek-broker -p odradek-cli) >&2

WORK="$(mktemp -d)"
BROKER_PID=""
KAFKA_DIR=""
cleanup() {
  [[ -n "$BROKER_PID" ]] && kill "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null
  [[ -n "$KAFKA_DIR" ]] && "$KAFKA_SH" stop "$KAFKA_DIR" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# The Java member, compiled against Kafka's client jars; its command, words separated by tabs.
java_member=""
if [[ ",$CLIENTS," == *,java,* ]]; then
  classpath="$("$KAFKA_SH" classpath)"
  mkdir -p "$WORK/java"
  javac -nowarn -d "$WORK/java" -cp "$classpath" "$ROOT/bench/RebalanceMember.java"
  java_member="$(printf '%s\t' java -Xmx192m -XX:+UseSerialGC \
    "-Dlog4j2.configurationFile=$ROOT/tests/compat/.cache/kafka-tools-log4j2.properties" \
    -cp "$classpath:$WORK/java" RebalanceMember)"
fi

# Starts BROKER (odradek or kafka); sets BOOTSTRAP.
start_broker() {
  case "$1" in
    odradek)
      local port overrides=()
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      BOOTSTRAP="127.0.0.1:$port"
      for prop in "${GROUP_PROPS[@]}"; do overrides+=(--override "$prop"); done
      "$REL/odradek-broker" --override "listeners=PLAINTEXT://$BOOTSTRAP" \
        --override "log.dirs=$WORK/data" "${overrides[@]}" >"$WORK/broker.log" 2>&1 &
      BROKER_PID=$!
      ;;
    kafka)
      KAFKA_DIR="$WORK/kafka"
      BOOTSTRAP="$(ODRADEK_KAFKA_EXTRA_PROPS="$(printf '%s\n' "${GROUP_PROPS[@]}")" \
        "$KAFKA_SH" start "$KAFKA_DIR")"
      ;;
    *) log "unknown broker $1"; exit 2 ;;
  esac
}

stop_broker() {
  if [[ -n "$BROKER_PID" ]]; then
    kill "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null || true; BROKER_PID=""
  fi
  if [[ -n "$KAFKA_DIR" ]]; then "$KAFKA_SH" stop "$KAFKA_DIR" >/dev/null; KAFKA_DIR=""; fi
}

# Measures against BOOTSTRAP, named $1 in the results.
measure() {
  local name="$1"
  local topic="rebalance-bench-$$-$name"
  for _ in $(seq 100); do
    "$REL/odradek" -b "$BOOTSTRAP" topics create "$topic" --partitions "$PARTITIONS" \
      >/dev/null 2>&1 && break
    sleep 0.1
  done
  mkdir -p "$HERE/results"
  local out="$HERE/results/rebalance-$(date +%F)-$name.jsonl"
  log "measuring against $name at $BOOTSTRAP: $REPEATS repeats, $MEMBERS members, $PARTITIONS partitions"
  "$BENCH_REL/rebalance" --bootstrap "$BOOTSTRAP" --topic "$topic" --members "$MEMBERS" \
    --partitions "$PARTITIONS" --repeats "$REPEATS" --clients "$CLIENTS" \
    --java-member "$java_member" \
    --strategies "${STRATEGIES:-range,cooperative-sticky,consumer}" | tee "$out"
  python3 "$HERE/report_rebalance.py" "$out" "$name"
}

if [[ -n "${BOOTSTRAP:-}" ]]; then
  measure "${BROKER_NAME:-external}"
  exit 0
fi
IFS=, read -r -a brokers <<<"$BROKERS"
for broker in "${brokers[@]}"; do
  start_broker "$broker"
  measure "$broker"
  stop_broker
done
