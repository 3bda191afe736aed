#!/usr/bin/env bash
# A local odradek-broker cluster on loopback: N nodes, each broker and controller
# (process.roles=broker,controller; the metadata quorum of all N), and commands to hurt single
# nodes. Its commands are those of tests/cluster/kafka-cluster.sh, so the fault tests can run
# on it through ODRADEK_CLUSTER_CMD.
#
#   scripts/cluster.sh start [N] [DIR]   start N nodes (default 3; DIR default ./odradek-cluster)
#                                        and print the bootstrap list
#   scripts/cluster.sh start DIR N       (the fault harness's argument order)
#   scripts/cluster.sh stop [DIR]        stop every node (controlled shutdown) and proxy
#   scripts/cluster.sh kill DIR ID       SIGKILL node ID (its data stays for a restart)
#   scripts/cluster.sh pause DIR ID      SIGSTOP node ID;  resume DIR ID: SIGCONT
#   scripts/cluster.sh restart DIR ID    start node ID again on its data and wait until it serves
#   scripts/cluster.sh cut DIR ID        black-hole every client connection to node ID (the
#                                        cluster's own traffic still flows); heal DIR ID ends it
#   scripts/cluster.sh controller DIR    print the id of the active controller
#   scripts/cluster.sh elect-unclean DIR TOPIC PARTITION
#                                        elect a leader among the live replicas even if none is
#                                        in sync (ElectLeaders, UNCLEAN; loses data)
#   scripts/cluster.sh addr DIR ID       print the client address of node ID
#   scripts/cluster.sh status [DIR]      one line per node: id, pid, state, client address
#
# stdout carries only the results named above; logs go to DIR/node-ID/broker.log.
#
# Every node: replication factor 3 by default (capped at N), min.insync.replicas=2 (1 when
# N=1), broker.rack=rack-ID with the rack-aware replica selector (KIP-392), fast failure detection for development
# (broker.session.timeout.ms=6000, replica.lag.time.max.ms=8000), and Kafka's 300 s between
# preferred-leader rebalances (a shorter one moved leaders in the middle of fault tests, which
# the Apache Kafka harness never does). Clients reach node ID
# through a cut proxy (tests/cluster/cutproxy.py) on its advertised EXTERNAL listener; brokers
# replicate over INTERNAL, controllers talk over CONTROLLER.
#
# Environment (all optional):
#   ODRADEK_BROKER_BIN           the broker binary (default: target/release/odradek-broker,
#                                else target/debug/odradek-broker, built if neither exists)
#   ODRADEK_CLUSTER_PROPS        extra server.properties lines for every node (later keys win)
#   ODRADEK_CLI_BIN              the odradek CLI for elect-unclean (default: target/release or
#                                target/debug odradek, built if neither exists)
#   ODRADEK_CLUSTER_DIRECT=1     no cut proxies: clients connect to each node's EXTERNAL listener
#                                itself (for benchmarks; `cut` and `heal` refuse)
set -euo pipefail

exec 3>&1 1>&2

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$HERE/.."
CUTPROXY="$ROOT/tests/cluster/cutproxy.py"

log() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

broker_bin() {
  if [[ -n "${ODRADEK_BROKER_BIN:-}" ]]; then
    printf '%s\n' "$ODRADEK_BROKER_BIN"
  elif [[ -x "$ROOT/target/release/odradek-broker" ]]; then
    printf '%s\n' "$ROOT/target/release/odradek-broker"
  elif [[ -x "$ROOT/target/debug/odradek-broker" ]]; then
    printf '%s\n' "$ROOT/target/debug/odradek-broker"
  else
    (cd "$ROOT" && cargo build --release -p odradek-broker >&2)
    printf '%s\n' "$ROOT/target/release/odradek-broker"
  fi
}

cli_bin() {
  if [[ -n "${ODRADEK_CLI_BIN:-}" ]]; then
    printf '%s\n' "$ODRADEK_CLI_BIN"
  elif [[ -x "$ROOT/target/release/odradek" ]]; then
    printf '%s\n' "$ROOT/target/release/odradek"
  elif [[ -x "$ROOT/target/debug/odradek" ]]; then
    printf '%s\n' "$ROOT/target/debug/odradek"
  else
    (cd "$ROOT" && cargo build --release -p odradek-cli >&2)
    printf '%s\n' "$ROOT/target/release/odradek"
  fi
}

free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

node_var() { sed -n "s/^$1=//p" "$DIR/node-$2/ports"; }

alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

wait_port() {
  local port=$1 deadline=$((SECONDS + ${2:-60}))
  until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null; do
    (( SECONDS < deadline )) || return 1
    sleep 0.1
  done
}

node_count() { ls -d "$DIR"/node-* 2>/dev/null | wc -l; }

start_proxy() {
  local id=$1
  if [[ "$(node_var DIRECT "$id")" == 1 ]]; then return 0; fi
  python3 "$CUTPROXY" "$(node_var PROXY_PORT "$id")" "$(node_var EXTERNAL_PORT "$id")" \
    >"$DIR/node-$id/proxy.log" 2>&1 3>&- &
  echo $! >"$DIR/node-$id/proxy.pid"
  wait_port "$(node_var PROXY_PORT "$id")" 10 || die "the cut proxy of node $id did not start"
}

start_node() {
  local id=$1 bin
  bin=$(broker_bin)
  local n; n=$(node_count)
  local voters="" i
  for ((i = 1; i <= n; i++)); do
    voters+="${voters:+,}$i@127.0.0.1:$(node_var CONTROLLER_PORT "$i")"
  done
  local rf=$(( n < 3 ? n : 3 )) min_isr=$(( n == 1 ? 1 : 2 ))
  local props="$DIR/node-$id/server.properties"
  cat >"$props" <<EOF
# Written by scripts/cluster.sh: node $id of $n (broker and controller).
process.roles=broker,controller
node.id=$id
cluster.id=$(cat "$DIR/cluster.id")
controller.quorum.voters=$voters
listeners=EXTERNAL://127.0.0.1:$(node_var EXTERNAL_PORT "$id"),INTERNAL://127.0.0.1:$(node_var INTERNAL_PORT "$id"),CONTROLLER://127.0.0.1:$(node_var CONTROLLER_PORT "$id")
advertised.listeners=EXTERNAL://127.0.0.1:$(node_var PROXY_PORT "$id"),INTERNAL://127.0.0.1:$(node_var INTERNAL_PORT "$id")
listener.security.protocol.map=EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=INTERNAL
controller.listener.names=CONTROLLER
log.dirs=$DIR/node-$id/data
broker.rack=rack-$id
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
default.replication.factor=$rf
min.insync.replicas=$min_isr
offsets.topic.replication.factor=$rf
num.partitions=4
group.initial.rebalance.delay.ms=0
broker.session.timeout.ms=6000
broker.heartbeat.interval.ms=500
replica.lag.time.max.ms=8000
${ODRADEK_CLUSTER_PROPS:-}
EOF
  "$bin" "$props" >"$DIR/node-$id/stdout.log" 2>>"$DIR/node-$id/broker.log" 3>&- &
  echo $! >"$DIR/node-$id/pid"
}

wait_serving() {
  local id=$1
  wait_port "$(node_var EXTERNAL_PORT "$id")" 60 || die "node $id did not start (see $DIR/node-$id/broker.log)"
}

cmd_start() {
  local n=3
  DIR=./odradek-cluster
  if [[ $# -ge 1 && "$1" =~ ^[0-9]+$ ]]; then
    n=$1; DIR=${2:-$DIR}
  elif [[ $# -ge 1 ]]; then
    DIR=$1; n=${2:-3}
  fi
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 ]] || die "N must be a positive number"
  mkdir -p "$DIR"
  DIR="$(cd "$DIR" && pwd -P)"
  [[ -d "$DIR/node-1" ]] && die "$DIR already holds a cluster (stop it, or remove the directory)"
  python3 -c 'import uuid; print(uuid.uuid4())' >"$DIR/cluster.id"
  local id
  for ((id = 1; id <= n; id++)); do
    mkdir -p "$DIR/node-$id/data"
    local external; external=$(free_port)
    {
      echo "EXTERNAL_PORT=$external"
      echo "INTERNAL_PORT=$(free_port)"
      echo "CONTROLLER_PORT=$(free_port)"
      if [[ "${ODRADEK_CLUSTER_DIRECT:-0}" == 1 ]]; then
        # Direct: clients are given the EXTERNAL listener itself (no cut proxy).
        echo "PROXY_PORT=$external"
        echo "DIRECT=1"
      else
        echo "PROXY_PORT=$(free_port)"
      fi
    } >"$DIR/node-$id/ports"
  done
  for ((id = 1; id <= n; id++)); do start_node "$id"; done
  for ((id = 1; id <= n; id++)); do wait_serving "$id"; start_proxy "$id"; done
  wait_registered "$n"
  local list=""
  for ((id = 1; id <= n; id++)); do list+="${list:+,}127.0.0.1:$(node_var PROXY_PORT "$id")"; done
  log "started $n nodes in $DIR"
  echo "$list" >&3
}

# Waits until every node's metadata lists all n brokers (registered and unfenced).
wait_registered() {
  local n=$1 deadline=$((SECONDS + 60)) id
  for ((id = 1; id <= n; id++)); do
    until [[ "$(brokers_seen "$(node_var INTERNAL_PORT "$id")")" == "$n" ]]; do
      (( SECONDS < deadline )) || die "node $id never saw $n brokers"
      sleep 0.2
    done
  done
}

# How many brokers a Metadata v1 request to 127.0.0.1:PORT lists.
brokers_seen() {
  python3 - "$1" <<'PY' 2>/dev/null || echo 0
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
client = b"cluster.sh"
body = struct.pack(">i", -1)  # all topics
header = struct.pack(">hhih", 3, 1, 1, len(client)) + client
frame = header + body
s.sendall(struct.pack(">i", len(frame)) + frame)
def read(n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data
size, = struct.unpack(">i", read(4))
resp = read(size)
count, = struct.unpack(">i", resp[4:8])
print(count)
PY
}

cmd_stop() {
  DIR=${1:-./odradek-cluster}
  [[ -d "$DIR" ]] || die "no cluster in $DIR"
  local n id; n=$(node_count)
  for ((id = 1; id <= n; id++)); do
    local pid; pid=$(cat "$DIR/node-$id/pid" 2>/dev/null || true)
    if alive "$pid"; then kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; fi
    pid=$(cat "$DIR/node-$id/proxy.pid" 2>/dev/null || true)
    if alive "$pid"; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for ((id = 1; id <= n; id++)); do
    local pid; pid=$(cat "$DIR/node-$id/pid" 2>/dev/null || true)
    local deadline=$((SECONDS + 40))
    while alive "$pid" && (( SECONDS < deadline )); do sleep 0.1; done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$DIR/node-$id/pid"
  done
  log "stopped $DIR"
}

need_node() {
  DIR=$1; local id=$2
  [[ -d "$DIR/node-$id" ]] || die "no node $id in $DIR"
  DIR="$(cd "$DIR" && pwd -P)"
}

cmd_kill() {
  need_node "$@"; local pid; pid=$(cat "$DIR/node-$2/pid" 2>/dev/null || true)
  alive "$pid" || die "node $2 is not running"
  kill -KILL "$pid"; while alive "$pid"; do sleep 0.05; done
  rm -f "$DIR/node-$2/pid"
}

cmd_pause() { need_node "$@"; kill -STOP "$(cat "$DIR/node-$2/pid")"; }
cmd_resume() { need_node "$@"; kill -CONT "$(cat "$DIR/node-$2/pid")"; }

cmd_restart() {
  need_node "$@"; local id=$2 pid; pid=$(cat "$DIR/node-$id/pid" 2>/dev/null || true)
  alive "$pid" && die "node $id is running"
  start_node "$id"
  wait_serving "$id"
}

cmd_cut() { need_node "$@"; proxy_of "$2"; kill -USR1 "$(cat "$DIR/node-$2/proxy.pid")"; }
cmd_heal() { need_node "$@"; proxy_of "$2"; kill -USR2 "$(cat "$DIR/node-$2/proxy.pid")"; }

# Fails unless node $1 has a cut proxy (a cluster started with ODRADEK_CLUSTER_DIRECT=1 has none).
proxy_of() {
  [[ "$(node_var DIRECT "$1")" != 1 ]] || die "started with ODRADEK_CLUSTER_DIRECT=1: no cut proxy"
}

# The active controller: the leader the live nodes' quorum-state files agree on in the
# highest epoch, waiting up to 15 s while an election is under way (no file names a leader).
cmd_controller() {
  DIR=$1
  for _ in $(seq 1 30); do
    if controller_now "$DIR" 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  controller_now "$DIR"
}

controller_now() {
  python3 - "$1" <<'PY' >&3
import glob, json, os, sys
best = None
for f in glob.glob(os.path.join(sys.argv[1], "node-*", "data", "__cluster_metadata-0", "quorum-state")):
    try:
        s = json.load(open(f))
    except (OSError, ValueError):
        continue
    if s.get("leader") is not None and (best is None or s["epoch"] > best[0]):
        best = (s["epoch"], s["leader"])
if best is None:
    sys.exit("no controller known")
print(best[1])
PY
}

cmd_elect_unclean() {
  [[ $# -eq 3 ]] || die "usage: cluster.sh elect-unclean DIR TOPIC PARTITION"
  DIR=$1
  local n id bootstrap=""
  n=$(node_count)
  for ((id = 1; id <= n; id++)); do
    alive "$(cat "$DIR/node-$id/pid" 2>/dev/null || true)" &&
      bootstrap+="${bootstrap:+,}127.0.0.1:$(node_var INTERNAL_PORT "$id")"
  done
  [[ -n "$bootstrap" ]] || die "no node is running"
  # An election that is not needed (the controller already elected one) is not a failure.
  "$(cli_bin)" -b "$bootstrap" topics elect "$2" --partition "$3" --unclean >&2
}

cmd_addr() { need_node "$@"; echo "127.0.0.1:$(node_var PROXY_PORT "$2")" >&3; }

cmd_status() {
  DIR=${1:-./odradek-cluster}
  local n id; n=$(node_count)
  for ((id = 1; id <= n; id++)); do
    local pid state; pid=$(cat "$DIR/node-$id/pid" 2>/dev/null || true)
    if ! alive "$pid"; then state=down
    elif [[ "$(ps -o stat= -p "$pid")" == T* ]]; then state=paused
    else state=up; fi
    echo "$id ${pid:--} $state 127.0.0.1:$(node_var PROXY_PORT "$id")" >&3
  done
}

cmd=${1:-}; shift || true
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  kill) cmd_kill "$@" ;;
  pause) cmd_pause "$@" ;;
  resume) cmd_resume "$@" ;;
  restart) cmd_restart "$@" ;;
  cut) cmd_cut "$@" ;;
  heal) cmd_heal "$@" ;;
  controller) cmd_controller "$@" ;;
  elect-unclean) cmd_elect_unclean "$@" ;;
  addr) cmd_addr "$@" ;;
  status) cmd_status "$@" ;;
  *) sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
