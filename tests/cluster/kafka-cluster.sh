#!/usr/bin/env bash
# Fault harness: an N-node Apache Kafka cluster (KRaft, every node a combined broker and
# controller) on loopback, with commands to hurt single nodes. Used by the Rust suite
# (tests/suite/src/cluster.rs) and by the bindings' suites; any cluster that offers the same
# commands can stand in for it (ODRADEK_CLUSTER_CMD).
#
#   kafka-cluster.sh start DIR [N]     start N nodes (default 3) in DIR; prints the bootstrap list
#   kafka-cluster.sh stop DIR          stop every node and proxy
#   kafka-cluster.sh kill DIR ID       SIGKILL node ID (its data stays for a restart)
#   kafka-cluster.sh pause DIR ID      SIGSTOP node ID (a node that hangs: no heartbeats)
#   kafka-cluster.sh resume DIR ID     SIGCONT node ID
#   kafka-cluster.sh restart DIR ID    start node ID again (after kill) and wait until it serves
#   kafka-cluster.sh cut DIR ID        black-hole every client connection to node ID (the
#                                      cluster's own traffic still flows: to the cluster the
#                                      node is healthy, to clients it is unreachable)
#   kafka-cluster.sh heal DIR ID       end the cut (connections caught in it are closed)
#   kafka-cluster.sh controller DIR    print the id of the active controller
#   kafka-cluster.sh elect-unclean DIR TOPIC PARTITION
#                                      elect a leader among the live replicas even if none
#                                      is in sync (ElectLeaders, UNCLEAN; loses data)
#   kafka-cluster.sh addr DIR ID       print the client address of node ID
#
# stdout carries only the results named above; everything else goes to stderr.
#
# Every node: replication factor 3 by default (capped at N), min.insync.replicas=2 (1 when
# N=1), broker.rack=rack-ID with the rack-aware replica selector (KIP-392),
# broker.session.timeout.ms=6000, replica.lag.time.max.ms=8000, unclean leader election off.
# Clients reach node ID through a cut proxy (tests/cluster/cutproxy.py) on its advertised
# EXTERNAL listener; brokers talk to each other on INTERNAL, controllers on CONTROLLER.
#
# Environment (all optional):
#   ODRADEK_KAFKA_HEAP            heap options per node (default "-Xmx384m -Xms64m")
#   ODRADEK_KAFKA_EXTRA_PROPS     extra server.properties lines for every node (later keys win)
#   ODRADEK_KAFKA_START_TIMEOUT   seconds to wait for readiness (default 180)
#   ODRADEK_CLUSTER_DIRECT=1      no cut proxies: clients connect to each node's EXTERNAL
#                                 listener itself (for benchmarks; `cut` and `heal` refuse)
set -euo pipefail

exec 3>&1 1>&2

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
KAFKA_SH="$HERE/../compat/kafka.sh"
CACHE="$HERE/../compat/.cache"
LIBS="$CACHE/kafka-libs"
PROBE_DIR="$CACHE/kafka-probe"
TOOLS_LOG4J="$CACHE/kafka-tools-log4j2.properties"

log() { printf 'kafka-cluster.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

java_bin() {
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    printf '%s\n' "$JAVA_HOME/bin/java"
  else
    command -v java || die "java not found (need Java 17+)"
  fi
}

free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

port_open() { (exec 9<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* ]] && { printf '%s\n' "$id"; return 0; }
  done
}

# Is PID alive and started from FILE (guards against pid reuse)?
alive() {
  local pid="$1" file="$2"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] || return 1
  [[ "$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$file"
}

cluster_dir() {
  [[ -d "$1" ]] || die "no cluster in $1"
  (cd "$1" && pwd -P)
}

# Loads DIR/cluster.env (NODES, and per node PROXY_PORT_i, EXTERNAL_PORT_i, CONTROLLER_PORT_i).
load_env() {
  [[ -f "$1/cluster.env" ]] || die "no cluster.env in $1 (not started?)"
  # shellcheck disable=SC1091
  source "$1/cluster.env"
}

node_var() { local v="$1_$2"; printf '%s\n' "${!v}"; }

check_id() {
  local id="$2"
  [[ "$id" =~ ^[0-9]+$ && " $NODES " == *" $id "* ]] || die "no node $id in $1 (nodes: $NODES)"
}

write_node_config() {
  local dir="$1" id="$2" n="$3" voters="$4"
  local nd="$dir/node-$id" rf=3 isr=2
  ((n < 3)) && rf=$n
  ((n < 2)) && isr=1
  mkdir -p "$nd"
  cat >"$nd/server.properties" <<EOF
# Written by tests/cluster/kafka-cluster.sh: node $id of $n (combined KRaft broker/controller).
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=INTERNAL://127.0.0.1:$(node_var INTERNAL_PORT "$id"),EXTERNAL://127.0.0.1:$(node_var EXTERNAL_PORT "$id"),CONTROLLER://127.0.0.1:$(node_var CONTROLLER_PORT "$id")
advertised.listeners=INTERNAL://127.0.0.1:$(node_var INTERNAL_PORT "$id"),EXTERNAL://127.0.0.1:$(node_var PROXY_PORT "$id")
listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=INTERNAL
controller.listener.names=CONTROLLER
log.dirs=$nd/data
broker.rack=rack-$id
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector

num.partitions=6
default.replication.factor=$rf
min.insync.replicas=$isr
unclean.leader.election.enable=false
auto.create.topics.enable=true
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=6
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr

# Faults show quickly: a silent broker is fenced after 6 s, a lagging follower leaves the ISR
# after 8 s.
broker.session.timeout.ms=6000
broker.heartbeat.interval.ms=1000
replica.lag.time.max.ms=8000

num.network.threads=2
num.io.threads=2
num.replica.fetchers=1
log.segment.bytes=104857600
EOF
  if [[ -n "${ODRADEK_KAFKA_EXTRA_PROPS:-}" ]]; then
    printf '\n# ODRADEK_KAFKA_EXTRA_PROPS\n%s\n' "$ODRADEK_KAFKA_EXTRA_PROPS" >>"$nd/server.properties"
  fi
  cat >"$nd/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $nd/kafka.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
EOF
}

launch_node() {
  local dir="$1" id="$2" java
  local nd="$dir/node-$id"
  java="$(java_bin)"
  local heap
  read -r -a heap <<<"${ODRADEK_KAFKA_HEAP:--Xmx384m -Xms64m}"
  "$java" "${heap[@]}" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$nd/log4j2.properties" \
    -cp "$LIBS/*" kafka.Kafka "$nd/server.properties" \
    </dev/null >>"$nd/kafka.out" 2>&1 3>&- &
  echo $! >"$nd/pid"
}

launch_proxy() {
  local dir="$1" id="$2"
  local nd="$dir/node-$id"
  if [[ "${DIRECT:-0}" == 1 ]]; then return 0; fi
  python3 "$HERE/cutproxy.py" "$(node_var PROXY_PORT "$id")" "$(node_var EXTERNAL_PORT "$id")" \
    </dev/null >"$nd/proxy.out" 2>&1 3>&- &
  echo $! >"$nd/proxy.pid"
  local end=$((SECONDS + 10))
  until grep -q ready "$nd/proxy.out" 2>/dev/null; do
    ((SECONDS < end)) || die "cut proxy of node $id did not start: $(cat "$nd/proxy.out")"
    sleep 0.05
  done
}

# How many times the node in directory $1 has logged that it started.
starts() {
  local n
  n="$(grep -cE 'Kafka Server started|started \(kafka\.server\.KafkaRaftServer\)' "$1/kafka.log" 2>/dev/null)" || true
  printf '%s\n' "${n:-0}"
}

node_pid() { cat "$1/node-$2/pid" 2>/dev/null || true; }

# Waits until node ID's server log reports its start number COUNT and the cluster lists it.
await_node() {
  local dir="$1" id="$2" count="$3" deadline="$4" java
  local nd="$dir/node-$id"
  java="$(java_bin)"
  while (($(starts "$nd") < count)); do
    alive "$(node_pid "$dir" "$id")" "$nd/server.properties" || {
      tail -n 40 "$nd/kafka.log" "$nd/kafka.out" >&2 || true
      die "node $id exited during startup"
    }
    ((SECONDS < deadline)) || die "node $id not started in time (see $nd/kafka.log)"
    sleep 0.2
  done
  local left=$(((deadline - SECONDS) * 1000))
  ((left < 5000)) && left=5000
  "$java" -Xmx64m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$TOOLS_LOG4J" \
    -cp "$LIBS/*:$PROBE_DIR" ReadyProbe "127.0.0.1:$(node_var PROXY_PORT "$id")" "$left" "$id" \
    </dev/null >&2 || die "node $id did not join the cluster in time"
}

cmd_start() {
  [[ $# -ge 1 && $# -le 2 ]] || die "usage: kafka-cluster.sh start DIR [N]"
  local n="${2:-3}"
  [[ "$n" =~ ^[1-9]$ ]] || die "N must be 1..9, got $n"
  mkdir -p "$1"
  local dir
  dir="$(cd "$1" && pwd -P)"
  if [[ -f "$dir/cluster.env" ]]; then
    cmd_stop "$dir"
    rm -rf "$dir"/node-* "$dir/cluster.env"
  fi
  "$KAFKA_SH" install
  local java id voters="" nodes="" taken=" "
  java="$(java_bin)"
  : >"$dir/cluster.env"
  for id in $(seq 1 "$n"); do
    nodes+="$id "
    local kind p
    for kind in PROXY_PORT EXTERNAL_PORT INTERNAL_PORT CONTROLLER_PORT; do
      p="$(free_port)"
      while [[ "$taken" == *" $p "* ]]; do p="$(free_port)"; done
      taken+="$p "
      printf '%s_%s=%s\n' "$kind" "$id" "$p" >>"$dir/cluster.env"
    done
    # Direct: clients are given the EXTERNAL listener itself.
    if [[ "${ODRADEK_CLUSTER_DIRECT:-0}" == 1 ]]; then
      printf 'PROXY_PORT_%s=$EXTERNAL_PORT_%s\n' "$id" "$id" >>"$dir/cluster.env"
    fi
  done
  printf 'NODES="%s"\n' "${nodes% }" >>"$dir/cluster.env"
  printf 'DIRECT=%s\n' "${ODRADEK_CLUSTER_DIRECT:-0}" >>"$dir/cluster.env"
  load_env "$dir"
  for id in $NODES; do
    voters+="${voters:+,}$id@127.0.0.1:$(node_var CONTROLLER_PORT "$id")"
  done
  local cid
  cid="$(new_cluster_id)"
  for id in $NODES; do
    write_node_config "$dir" "$id" "$n" "$voters"
    "$java" -Xmx256m -Dlog4j2.configurationFile="$TOOLS_LOG4J" -cp "$LIBS/*" \
      kafka.tools.StorageTool format -t "$cid" -c "$dir/node-$id/server.properties" \
      </dev/null >>"$dir/node-$id/format.log" 2>&1 || {
      cat "$dir/node-$id/format.log" >&2
      die "storage format of node $id failed"
    }
  done
  for id in $NODES; do
    launch_proxy "$dir" "$id"
    launch_node "$dir" "$id"
  done
  local deadline=$((SECONDS + ${ODRADEK_KAFKA_START_TIMEOUT:-180}))
  for id in $NODES; do
    await_node "$dir" "$id" 1 "$deadline"
  done
  log "start: $n nodes ready after ${SECONDS}s in $dir"
  local list=""
  for id in $NODES; do
    list+="${list:+,}127.0.0.1:$(node_var PROXY_PORT "$id")"
  done
  printf '%s\n' "$list" >&3
}

stop_pid() {
  local pid="$1" file="$2" signal="${3:-TERM}"
  alive "$pid" "$file" || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill "-$signal" "$pid" 2>/dev/null || true
  local end=$((SECONDS + 20))
  while alive "$pid" "$file"; do
    if ((SECONDS >= end)); then
      kill -KILL "$pid" 2>/dev/null || true
      end=$((SECONDS + 10))
    fi
    sleep 0.1
  done
}

cmd_stop() {
  [[ $# -eq 1 ]] || die "usage: kafka-cluster.sh stop DIR"
  [[ -f "$1/cluster.env" ]] || { log "stop: no cluster in $1"; return 0; }
  local dir id
  dir="$(cluster_dir "$1")"
  load_env "$dir"
  # Killed at once: a clean shutdown of every node would wait on the others' controllers.
  for id in $NODES; do
    stop_pid "$(node_pid "$dir" "$id")" "$dir/node-$id/server.properties" KILL
    stop_pid "$(cat "$dir/node-$id/proxy.pid" 2>/dev/null || true)" "cutproxy.py"
  done
  log "stop: cluster in $dir stopped"
}

signal_node() {
  local dir id signal="$3"
  dir="$(cluster_dir "$1")"
  id="$2"
  load_env "$dir"
  check_id "$dir" "$id"
  local pid
  pid="$(node_pid "$dir" "$id")"
  alive "$pid" "$dir/node-$id/server.properties" || die "node $id is not running"
  kill "-$signal" "$pid"
  if [[ "$signal" == KILL ]]; then
    while alive "$pid" "$dir/node-$id/server.properties"; do sleep 0.05; done
  fi
  log "$signal sent to node $id (pid $pid)"
}

cmd_restart() {
  [[ $# -eq 2 ]] || die "usage: kafka-cluster.sh restart DIR ID"
  local dir id="$2"
  dir="$(cluster_dir "$1")"
  load_env "$dir"
  check_id "$dir" "$id"
  alive "$(node_pid "$dir" "$id")" "$dir/node-$id/server.properties" && die "node $id is running"
  local started
  started="$(starts "$dir/node-$id")"
  launch_node "$dir" "$id"
  await_node "$dir" "$id" $((started + 1)) $((SECONDS + ${ODRADEK_KAFKA_START_TIMEOUT:-180}))
  log "restart: node $id serves again"
}

proxy_signal() {
  local dir id="$2" signal="$3"
  dir="$(cluster_dir "$1")"
  load_env "$dir"
  check_id "$dir" "$id"
  [[ "${DIRECT:-0}" != 1 ]] || die "started with ODRADEK_CLUSTER_DIRECT=1: no cut proxy to $signal"
  local pid
  pid="$(cat "$dir/node-$id/proxy.pid")"
  alive "$pid" cutproxy.py || die "the cut proxy of node $id is not running"
  kill "-$signal" "$pid"
}

# The KIND addresses (PROXY_PORT: clients, CONTROLLER_PORT: the quorum) of the running nodes,
# comma-separated; fails when none runs.
live_addresses() {
  local dir="$1" kind="$2" id list=""
  for id in $NODES; do
    alive "$(node_pid "$dir" "$id")" "$dir/node-$id/server.properties" || continue
    list+="${list:+,}127.0.0.1:$(node_var "$kind" "$id")"
  done
  [[ -n "$list" ]] || die "no node is running"
  printf '%s\n' "$list"
}

cmd_controller() {
  [[ $# -eq 1 ]] || die "usage: kafka-cluster.sh controller DIR"
  local dir java voters
  dir="$(cluster_dir "$1")"
  load_env "$dir"
  java="$(java_bin)"
  voters="$(live_addresses "$dir" CONTROLLER_PORT)"
  local out leader
  out="$("$java" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$TOOLS_LOG4J" -cp "$LIBS/*" \
    org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "$voters" \
    describe --status </dev/null 2>&1)" || die "describe quorum failed: $out"
  leader="$(sed -n 's/^LeaderId:[[:space:]]*\([0-9]*\).*/\1/p' <<<"$out")"
  [[ -n "$leader" ]] || die "no LeaderId in: $out"
  printf '%s\n' "$leader" >&3
}

cmd_elect_unclean() {
  [[ $# -eq 3 ]] || die "usage: kafka-cluster.sh elect-unclean DIR TOPIC PARTITION"
  local dir java list
  dir="$(cluster_dir "$1")"
  load_env "$dir"
  java="$(java_bin)"
  list="$(live_addresses "$dir" PROXY_PORT)"
  "$java" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$TOOLS_LOG4J" -cp "$LIBS/*" \
    org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$list" \
    --election-type unclean --topic "$2" --partition "$3" </dev/null >&2 ||
    die "unclean election of $2-$3 failed"
}

cmd_addr() {
  [[ $# -eq 2 ]] || die "usage: kafka-cluster.sh addr DIR ID"
  local dir
  dir="$(cluster_dir "$1")"
  load_env "$dir"
  check_id "$dir" "$2"
  printf '127.0.0.1:%s\n' "$(node_var PROXY_PORT "$2")" >&3
}

main() {
  local sub="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$sub" in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    kill) [[ $# -eq 2 ]] || die "usage: kill DIR ID"; signal_node "$1" "$2" KILL ;;
    pause) [[ $# -eq 2 ]] || die "usage: pause DIR ID"; signal_node "$1" "$2" STOP ;;
    resume) [[ $# -eq 2 ]] || die "usage: resume DIR ID"; signal_node "$1" "$2" CONT ;;
    restart) cmd_restart "$@" ;;
    cut) [[ $# -eq 2 ]] || die "usage: cut DIR ID"; proxy_signal "$1" "$2" USR1 ;;
    heal) [[ $# -eq 2 ]] || die "usage: heal DIR ID"; proxy_signal "$1" "$2" USR2 ;;
    controller) cmd_controller "$@" ;;
    elect-unclean) cmd_elect_unclean "$@" ;;
    addr) cmd_addr "$@" ;;
    *) die "usage: kafka-cluster.sh {start DIR [N]|stop DIR|kill|pause|resume|restart|cut|heal DIR ID|controller DIR|addr DIR ID}" ;;
  esac
}

main "$@"
