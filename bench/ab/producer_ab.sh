#!/usr/bin/env bash
# A/B benchmark of Odradek's producers between two source trees: a commit (BASE) and this
# working tree (or another commit, HEAD), side by side against one broker, rounds interleaved
# base/head, in every language: Rust (bench/client's odradek-bench), Python (produce() and
# produce_batch()), C (bench/c/bench.c, delivery reports), Node (bench/node/bench.mjs, odradek
# only). It answers "is this change slower?", not "how do we compare with librdkafka?" (that is
# bench/run).
#
#   bench/ab/producer_ab.sh BASE [HEAD]      e.g. bench/ab/producer_ab.sh aad02e5
#
# Environment: ROUNDS=5, COUNT_RUST=1000000, COUNT_PY=300000, COUNT_C=1000000, COUNT_NODE=200000,
# LANGS="rust python c node", AB_WORK=<dir> (build trees kept there between runs; default
# target/ab). Every run checks that all records were delivered (the tools exit non-zero
# otherwise). Output: one line per run and a Markdown table of medians (msgs/s, CPU us/msg, and
# head/base ratios) on stdout, also written to bench/results/producer-ab-<date>.md.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"
BASE="${1:?usage: bench/ab/producer_ab.sh BASE [HEAD]}"
HEAD_REV="${2:-}"
ROUNDS="${ROUNDS:-5}"
COUNT_RUST="${COUNT_RUST:-1000000}"
COUNT_PY="${COUNT_PY:-300000}"
COUNT_C="${COUNT_C:-1000000}"
COUNT_NODE="${COUNT_NODE:-200000}"
LANGS="${LANGS:-rust python c node}"
WORKDIR="${AB_WORK:-$ROOT/target/ab}"
log() { printf 'producer_ab: %s\n' "$*" >&2; }
mkdir -p "$WORKDIR"

# 1. The two trees: BASE (and HEAD when given) as worktrees, each with its own target dir.
tree_for() { # rev -> directory
  local rev="$1" dir
  dir="$WORKDIR/tree-$(git -C "$ROOT" rev-parse --short "$rev")"
  if [[ ! -d "$dir" ]]; then
    git -C "$ROOT" worktree add --detach "$dir" "$rev" >&2
  fi
  echo "$dir"
}
BASE_TREE="$(tree_for "$BASE")"
if [[ -n "$HEAD_REV" ]]; then HEAD_TREE="$(tree_for "$HEAD_REV")"; else HEAD_TREE="$ROOT"; fi
BASE_LABEL="base $(git -C "$BASE_TREE" rev-parse --short HEAD)"
HEAD_LABEL="head $(git -C "$HEAD_TREE" rev-parse --short HEAD)"
if [[ -z "$HEAD_REV" && -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]]; then
  HEAD_LABEL+="+changes"
fi

# 2. Release builds per tree, copied into $WORKDIR/<side>/ so a later rebuild changes nothing.
build_side() { # side tree
  local side="$1" tree="$2" out="$WORKDIR/$1" target
  target="$tree/target"
  [[ "$tree" == "$ROOT" ]] && target="${CARGO_TARGET_DIR:-$ROOT/target}"
  rm -rf "$out"; mkdir -p "$out"
  log "$side: building in $tree"
  (cd "$tree" && CARGO_TARGET_DIR="$target" cargo build -q --release -p odradek-c -p odradek-node -p odradek-broker) >&2
  cp "$target/release/libodradek.so" "$out/"
  cp "$target/release/libodradek_node.so" "$out/odradek.node"
  cp "$target/release/odradek-broker" "$out/"
  (cd "$tree/bench/client" && CARGO_TARGET_DIR="$tree/bench/client/target" cargo build -q --release) >&2
  cp "$tree/bench/client/target/release/odradek-bench" "$out/"
  cc -O2 -Wall -Wextra -Werror -I"$tree/c/include" "$ROOT/bench/c/bench.c" -o "$out/bench-c" \
    -L"$out" -lodradek -Wl,-rpath,"$out"
  python3 -m venv "$out/venv"
  "$out/venv/bin/pip" install -q --upgrade pip >&2
  (cd "$tree" && CARGO_TARGET_DIR="$target" "$out/venv/bin/pip" install -q ./python) >&2
}
build_side base "$BASE_TREE"
build_side head "$HEAD_TREE"
(cd "$ROOT/node" && ODRADEK_NODE_SKIP_BUILD=1 npm ci --no-audit --no-fund --loglevel=error </dev/null >&2)

# 3. One broker (head's), data in memory when /dev/shm has room.
TMPBASE="${TMPDIR:-/tmp}"
if [[ -d /dev/shm && -w /dev/shm ]] && (( $(df -Pk /dev/shm | awk 'NR==2 {print $4}') > 4194304 )); then
  TMPBASE=/dev/shm
fi
RUN="$(mktemp -d "$TMPBASE/producer-ab.XXXXXX")"
BROKER_PID=""
cleanup() {
  [[ -n "$BROKER_PID" ]] && kill -TERM "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null
  rm -rf "$RUN"
}
trap cleanup EXIT
mkdir -p "$RUN/data"
"$WORKDIR/head/odradek-broker" --override listeners=PLAINTEXT://127.0.0.1:0 \
  --override "log.dirs=$RUN/data" --override num.partitions=1 \
  --override log.retention.bytes=268435456 --override log.segment.bytes=134217728 \
  --override log.retention.check.interval.ms=5000 \
  >"$RUN/broker.out" 2>"$RUN/broker.err" </dev/null &
BROKER_PID=$!
BOOTSTRAP=""
for _ in $(seq 1 300); do
  BOOTSTRAP="$(sed -n 's/^odradek-broker listening on \([^ ]*\)$/\1/p' "$RUN/broker.out" | head -n1)"
  [[ -n "$BOOTSTRAP" ]] && break
  sleep 0.1
done
[[ -n "$BOOTSTRAP" ]] || { tail -n 20 "$RUN/broker.err" >&2; exit 1; }
log "broker at $BOOTSTRAP; $ROUNDS rounds; $BASE_LABEL vs $HEAD_LABEL"

# 4. Runs. Each appends "lang scenario side msgs_per_s cpu_us_per_msg" to $RUN/results.
RESULTS="$RUN/results"
: >"$RESULTS"
# CPU: the user+sys time of this shell's reaped children (cutime+cstime of /proc/$$/stat),
# before and after the command substitution, so the client process and its threads count.
measure() { # lang scenario side count cmd... : runs cmd, which prints msgs/s on its last line
  local lang="$1" scenario="$2" side="$3" count="$4"; shift 4
  local start_cpu end_cpu out rate cpu
  start_cpu="$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)"
  out="$( "$@" )" || { log "$lang $scenario $side failed: $out"; exit 1; }
  end_cpu="$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)"
  rate="$(printf '%s\n' "$out" | tail -n1 | awk '{print $1}')"
  cpu="$(awk -v a="$start_cpu" -v b="$end_cpu" -v n="$count" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.3f", (b - a) / hz * 1e6 / n }')"
  printf '%s %s %s %s %s\n' "$lang" "$scenario" "$side" "$rate" "$cpu" | tee -a "$RESULTS" >&2
}
rust_run() { # side size compression partitions topic
  "$WORKDIR/$1/odradek-bench" create-topic --bootstrap "$BOOTSTRAP" --topic "$5" --partitions "$4" >/dev/null
  "$WORKDIR/$1/odradek-bench" produce --client odradek --bootstrap "$BOOTSTRAP" --topic "$5" \
    --count "$COUNT_RUST" --size "$2" --acks 1 --compression "$3" --partitions "$4" \
    | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["msgs_per_s"])'
  "$WORKDIR/$1/odradek-bench" delete-topic --bootstrap "$BOOTSTRAP" --topic "$5" >/dev/null
}
py_run() { # side mode topic
  "$WORKDIR/$1/venv/bin/python" "$HERE/py_produce.py" "$BOOTSTRAP" "$3" "$COUNT_PY" 100 "$2" \
    | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["msgs_per_s"])'
}
c_run() { # side topic
  "$WORKDIR/$1/bench-c" produce "$BOOTSTRAP" "$2" "$COUNT_C" 100 | awk '{print $7}'
}
node_run() { # side
  ODRADEK_NODE_ADDON="$WORKDIR/$1/odradek.node" ODRADEK_BENCH_BOOTSTRAP="$BOOTSTRAP" \
    KAFKAJS_NO_PARTITIONER_WARNING=1 node "$ROOT/bench/node/bench.mjs" --clients odradek \
    --messages "$COUNT_NODE" --rounds 1 --json "$RUN/node-$1.json" >/dev/null
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["summary"]["produce"]["odradek"]["msgs_per_s"])' "$RUN/node-$1.json"
}
for round in $(seq 1 "$ROUNDS"); do
  for side in base head; do
    # Alternate which side goes first, so drift in the machine's load favours neither.
    if (( round % 2 == 0 )); then
      if [[ $side == base ]]; then side=head; else side=base; fi
    fi
    for lang in $LANGS; do
      case "$lang" in
        rust)
          measure rust 100B-none-p1 "$side" "$COUNT_RUST" rust_run "$side" 100 none 1 "ab-r1-$side-$round"
          measure rust 1KiB-lz4-p1 "$side" "$COUNT_RUST" rust_run "$side" 1024 lz4 1 "ab-r2-$side-$round"
          measure rust 100B-none-p8 "$side" "$COUNT_RUST" rust_run "$side" 100 none 8 "ab-r3-$side-$round" ;;
        python)
          measure python produce "$side" "$COUNT_PY" py_run "$side" produce "ab-p1-$side-$round"
          measure python produce_batch "$side" "$COUNT_PY" py_run "$side" produce_batch "ab-p2-$side-$round" ;;
        c) measure c produce-dr "$side" "$COUNT_C" c_run "$side" "ab-c-$side-$round" ;;
        node) measure node send "$side" "$COUNT_NODE" node_run "$side" ;;
      esac
    done
  done
done

# 5. Medians and ratios.
DATE="$(date +%F)"
mkdir -p "$ROOT/bench/results"
python3 - "$RESULTS" "$BASE_LABEL" "$HEAD_LABEL" "$ROUNDS" <<'PY' | tee "$ROOT/bench/results/producer-ab-$DATE.md"
import statistics, sys
path, base, head, rounds = sys.argv[1:5]
rows = {}
for line in open(path):
    lang, scen, side, rate, cpu = line.split()
    rows.setdefault((lang, scen), {}).setdefault(side, []).append((float(rate), float(cpu)))
print(f"# Producer A/B: {head} vs {base}\n")
print(f"bench/ab/producer_ab.sh, {rounds} interleaved rounds, one odradek-broker (head's build), medians;"
      " CPU is the whole client process per record (the C, Python and Node figures include"
      " start-up).\n")
print("| language | scenario | base msgs/s | head msgs/s | head/base | base CPU us/msg | head CPU us/msg | CPU head/base |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for (lang, scen), sides in rows.items():
    b, h = sides.get("base", []), sides.get("head", [])
    if not b or not h:
        continue
    br, hr = statistics.median(r for r, _ in b), statistics.median(r for r, _ in h)
    bc, hc = statistics.median(c for _, c in b), statistics.median(c for _, c in h)
    print(f"| {lang} | {scen} | {br:,.0f} | {hr:,.0f} | {hr / br:.2f}x | {bc:.2f} | {hc:.2f} | {hc / bc:.2f}x |")
PY
