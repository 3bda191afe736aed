#!/usr/bin/env bash
# C benchmark: the same producer / consumer program (bench/c/bench.c) compiled against
# libodradek and against librdkafka (Debian's librdkafka-dev, installed here if missing), run
# against one release odradek-broker, interleaved, 100-byte messages on one partition.
#
#   bench/c/run.sh [COUNT] [SIZE] [ROUNDS]     defaults: 1000000 100 3
#
# Modes: produce (one call per message), produce_batch (rd_kafka_produce_batch /
# odk_produce_batch, 1000 messages per call), consume. librdkafka runs twice per round: with its
# defaults and tuned for throughput (BENCH_RDKAFKA_TUNED=1, see bench.c); one warm-up round
# is not reported. Each checks its work: every delivery
# report succeeded and came once per message, or every message was read.
# Prints one line per run and a summary (medians over the rounds) with msgs/s and libodradek /
# librdkafka ratios; the summary is also written to bench/c/results/c-<date>.md.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
COUNT="${1:-1000000}"
SIZE="${2:-100}"
ROUNDS="${3:-3}"
log() { printf 'bench/c: %s\n' "$*" >&2; }

if ! pkg-config --exists rdkafka 2>/dev/null; then
  log "installing librdkafka-dev"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librdkafka-dev pkg-config >/dev/null
fi

log "building libodradek and odradek-broker (release)"
(cd "$ROOT" && cargo build -q --release -p odradek-c -p odradek-broker)

work="$(mktemp -d)"
broker_pid=""
cleanup() {
  [[ -n "$broker_pid" ]] && kill -TERM "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cc -O2 -Wall -Wextra -Werror -I"$ROOT/c/include" "$HERE/bench.c" -o "$work/bench-odradek" \
  -L"$TARGET/release" -lodradek -Wl,-rpath,"$TARGET/release"
# shellcheck disable=SC2046
cc -O2 -Wall -Wextra -Werror -DBENCH_RDKAFKA $(pkg-config --cflags rdkafka) "$HERE/bench.c" \
  -o "$work/bench-rdkafka" $(pkg-config --libs rdkafka)
rdk_version="$(pkg-config --modversion rdkafka)"

mkdir -p "$work/data"
"$TARGET/release/odradek-broker" --override listeners=PLAINTEXT://127.0.0.1:0 \
  --override "log.dirs=$work/data" --override num.partitions=1 \
  >"$work/broker.out" 2>"$work/broker.err" </dev/null &
broker_pid=$!
bootstrap=""
for _ in $(seq 1 300); do
  bootstrap="$(sed -n 's/^odradek-broker listening on \([^ ]*\)$/\1/p' "$work/broker.out" | head -n1)"
  [[ -n "$bootstrap" ]] && break
  sleep 0.1
done
[[ -n "$bootstrap" ]] || { tail -n 20 "$work/broker.err" >&2; exit 1; }
log "broker at $bootstrap; $COUNT messages of $SIZE B, $ROUNDS rounds, librdkafka $rdk_version"

results="$work/results.txt"
# One warm-up round (round 0, not in the results), then the measured rounds. librdkafka runs
# twice per round: with its defaults and tuned (BENCH_RDKAFKA_TUNED=1, see bench.c).
run() { # BACKEND(rdkafka|rdkafka-tuned|odradek) MODE TOPIC [COUNT SIZE]
  local backend="$1" bin="$work/bench-${1%-tuned}" tuned=0
  [[ "$backend" == *-tuned ]] && tuned=1
  shift
  BENCH_RDKAFKA_TUNED=$tuned "$bin" "$1" "$bootstrap" "${@:2}"
}
for round in $(seq 0 "$ROUNDS"); do
  sink="$results"
  [[ $round == 0 ]] && sink=/dev/null
  for backend in rdkafka rdkafka-tuned odradek; do
    topic="bench-$backend-$round"
    run "$backend" produce "$topic" "$COUNT" "$SIZE" | tee -a "$sink"
    run "$backend" produce_batch "$topic-batch" "$COUNT" "$SIZE" | tee -a "$sink"
  done
  for backend in rdkafka rdkafka-tuned odradek; do
    run "$backend" consume "bench-$backend-$round" "$COUNT" | tee -a "$sink"
  done
done

median() { # median of the msgs/s column of BACKEND MODE lines
  awk -v b="$1" -v m="$2" '$1 == b && $2 == m { print $7 }' "$results" | sort -n \
    | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
summary="| mode | librdkafka tuned msgs/s | librdkafka defaults msgs/s | libodradek msgs/s | libodradek / tuned | libodradek / defaults |
|---|---:|---:|---:|---:|---:|"
for mode in produce produce_batch consume; do
  t="$(median librdkafka-tuned "$mode")"
  r="$(median librdkafka "$mode")"
  o="$(median libodradek "$mode")"
  summary+="
$(awk -v m="$mode" -v t="$t" -v r="$r" -v o="$o" 'BEGIN { printf "| %s | %.0f | %.0f | %.0f | %.2fx | %.2fx |", m, t, r, o, o / t, o / r }')"
done
echo
echo "$summary"
mkdir -p "$HERE/results"
out="$HERE/results/c-$(date +%Y-%m-%d).md"
{
  echo "# C clients: libodradek vs librdkafka $rdk_version"
  echo
  echo "bench/c/run.sh $COUNT $SIZE $ROUNDS: $COUNT messages of $SIZE B, one partition, one release"
  echo "odradek-broker, a warm-up round, then $ROUNDS interleaved rounds (medians below; raw lines"
  echo "after). librdkafka tuned: producer batch.num.messages=1000000, socket.nagle.disable=true;"
  echo "consumer queued.min.messages=1000000 (BENCH_RDKAFKA_TUNED in bench/c/bench.c). Load average"
  echo "when the runs ended: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (a shared machine: single runs are noisy)."
  echo
  echo "$summary"
  echo
  echo '```'
  cat "$results"
  echo '```'
} >"$out"
log "wrote $out"
