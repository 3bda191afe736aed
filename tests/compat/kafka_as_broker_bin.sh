#!/usr/bin/env bash
# Stand-in for the odradek-broker binary that runs Apache Kafka (kafka.sh) instead, so
# test_broker_peers.py can be checked against the reference implementation:
#
#   ODRADEK_BROKER_BIN=tests/compat/kafka_as_broker_bin.sh ODRADEK_BROKER_START_TIMEOUT=150 \
#       tests/compat/run_broker_peers.sh
#
# Accepts the broker's command line (--override key=value ...): listeners is ignored (kafka.sh
# picks the ports), log.dirs names the working directory, every other key is appended to
# Kafka's server.properties. Prints `odradek-broker listening on 127.0.0.1:PORT` once Kafka is
# ready, and on SIGTERM/SIGINT stops Kafka and exits 0.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
dir=""
extra=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --override)
      [[ $# -ge 2 ]] || { echo "kafka_as_broker_bin.sh: --override needs key=value" >&2; exit 2; }
      case "$2" in
        listeners=*) ;;
        log.dirs=*) dir="${2#log.dirs=}" ;;
        *) extra+="$2"$'\n' ;;
      esac
      shift 2 ;;
    *) echo "kafka_as_broker_bin.sh: unsupported argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$dir" ]] || { echo "kafka_as_broker_bin.sh: needs --override log.dirs=DIR" >&2; exit 2; }

work="$dir/kafka"
export ODRADEK_KAFKA_EXTRA_PROPS="${ODRADEK_KAFKA_EXTRA_PROPS:-}"$'\n'"$extra"
addr="$("$HERE/kafka.sh" start "$work")"

waiter=""
stop() { [[ -n "$waiter" ]] && kill "$waiter" 2>/dev/null || true; }
trap stop TERM INT
sleep 2147483647 &
waiter=$!
echo "odradek-broker listening on $addr"
wait "$waiter" || true
trap - TERM INT
"$HERE/kafka.sh" stop "$work"
