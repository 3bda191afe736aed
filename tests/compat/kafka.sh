#!/usr/bin/env bash
# Apache Kafka peer for the compatibility tier: install the jars, start and stop a single-node
# KRaft broker on loopback.
#
#   kafka.sh install          resolve the jars into .cache/kafka-libs/ (no-op when up to date)
#   kafka.sh start DIR        start a fresh broker in DIR; prints exactly `127.0.0.1:PORT`
#   kafka.sh stop DIR         stop the broker started in DIR (TERM, then KILL)
#   kafka.sh classpath        print the Java classpath of the jars
#   kafka.sh run CLASS ARGS…  run a Java main from the jars (e.g. ProducerPerformance)
#
# stdout carries only the results named above; everything else goes to stderr.
#
# Environment (all optional):
#   JAVA_HOME                        Java 17+ to use (default: `java` on PATH)
#   ODRADEK_MAVEN_REPO               Maven local repository (default: Maven's own, ~/.m2/repository)
#   ODRADEK_KAFKA_START_TIMEOUT      seconds to wait for readiness (default 120)
#   ODRADEK_KAFKA_STOP_TIMEOUT       seconds to wait after TERM before KILL (default 30)
#   ODRADEK_KAFKA_HEAP               broker heap options (default "-Xmx512m -Xms128m")
#   ODRADEK_KAFKA_JVM_OPTS           extra broker JVM options
#   ODRADEK_KAFKA_EXTRA_PROPS        extra lines appended to server.properties (later keys win)
#   ODRADEK_KAFKA_SECURE=PKIDIR      also open secured listeners with the certificates of
#                                    tests/security/certs.sh PKIDIR: SSL, MTLS (SSL with client
#                                    certificates required), SASL_SSL and SASL_PLAINTEXT (PLAIN,
#                                    SCRAM-SHA-256/512 users alice and admin, OAUTHBEARER with
#                                    Kafka's unsecured validator; SASL_PLAINTEXT sessions end after
#                                    3 s: connections.max.reauth.ms), StandardAuthorizer with super
#                                    users ANONYMOUS and admin; `start` writes their addresses to
#                                    DIR/listeners.env (NAME=127.0.0.1:PORT) and passwords to
#                                    DIR/users.env
set -euo pipefail

# Keep stdout for results only: fd 3 is the real stdout, fd 1 goes to stderr.
exec 3>&1 1>&2

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
CACHE="$HERE/.cache"
LIBS="$CACHE/kafka-libs"
PROBE_DIR="$CACHE/kafka-probe"
STAMP="$LIBS/.odradek-stamp"
TOOLS_LOG4J="$CACHE/kafka-tools-log4j2.properties"
NODE_ID=1
# Bump when the install steps below change, to invalidate existing installs.
INSTALL_VERSION=1
INSTALL_TMP=""

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

java_bin() {
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    printf '%s\n' "$JAVA_HOME/bin/java"
  else
    command -v java || die "java not found (need Java 17+)"
  fi
}

javac_bin() {
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/javac" ]]; then
    printf '%s\n' "$JAVA_HOME/bin/javac"
  else
    command -v javac || die "javac not found (need a Java 17+ JDK)"
  fi
}

# Hash of everything that determines the contents of .cache/kafka-libs and the probe.
wanted_stamp() {
  { echo "install-version $INSTALL_VERSION"; cat "$HERE/pom.xml" "$HERE/ReadyProbe.java"; } |
    sha256sum | cut -d' ' -f1
}

is_installed() {
  [[ -f "$STAMP" && -f "$PROBE_DIR/ReadyProbe.class" && -f "$TOOLS_LOG4J" ]] &&
    [[ "$(cat "$STAMP")" == "$(wanted_stamp)" ]]
}

cmd_install() {
  mkdir -p "$CACHE"
  # Serialise concurrent installs (parallel test runners) when flock is available.
  if command -v flock >/dev/null 2>&1 && [[ -z "${ODRADEK_KAFKA_INSTALL_LOCKED:-}" ]]; then
    export ODRADEK_KAFKA_INSTALL_LOCKED=1
    flock "$CACHE/.kafka-install.lock" "$HERE/kafka.sh" install 3>&-
    return
  fi
  if is_installed; then
    log "install: up to date ($LIBS)"
    return 0
  fi

  local java javac major
  java="$(java_bin)"
  javac="$(javac_bin)"
  major="$("$java" -XshowSettings:properties -version 2>&1 |
    sed -n 's/^ *java\.specification\.version = //p')"
  [[ "${major%%.*}" =~ ^[0-9]+$ && "${major%%.*}" -ge 17 ]] ||
    die "Kafka 4.x needs Java 17+, $java is ${major:-unknown}"
  command -v mvn >/dev/null 2>&1 || die "mvn not found"

  INSTALL_TMP="$(mktemp -d "$CACHE/.kafka-install.XXXXXX")"
  trap 'rm -rf "$INSTALL_TMP"' EXIT
  local tmp="$INSTALL_TMP"
  local mvn_args=(-B -q -f "$HERE/pom.xml" dependency:copy-dependencies
    -DincludeScope=runtime -DoutputDirectory="$tmp/libs")
  if [[ -n "${ODRADEK_MAVEN_REPO:-}" ]]; then
    mvn_args+=(-Dmaven.repo.local="$ODRADEK_MAVEN_REPO")
  fi
  log "install: resolving Kafka jars with Maven"
  # (sed: Maven 3.8 prints bare colour resets even with -B -q)
  mvn "${mvn_args[@]}" </dev/null 2>&1 | sed 's/\x1b\[0m//g' >&2 || die "maven failed to resolve the Kafka jars"
  ls "$tmp/libs"/kafka_2.13-*.jar >/dev/null 2>&1 || die "kafka_2.13 jar missing after resolve"

  log "install: compiling the readiness probe"
  mkdir -p "$tmp/probe"
  "$javac" -nowarn -d "$tmp/probe" -cp "$tmp/libs/*" "$HERE/ReadyProbe.java" </dev/null >&2

  cat >"$tmp/tools-log4j2.properties" <<'EOF'
# Java tools and clients run by kafka.sh: warnings and errors to stderr only.
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
EOF

  wanted_stamp >"$tmp/libs/.odradek-stamp"
  rm -rf "$LIBS" "$PROBE_DIR"
  mv "$tmp/libs" "$LIBS"
  mv "$tmp/probe" "$PROBE_DIR"
  mv "$tmp/tools-log4j2.properties" "$TOOLS_LOG4J"
  rm -rf "$tmp"
  trap - EXIT
  log "install: $(find "$LIBS" -name '*.jar' | wc -l) jars in $LIBS"
}

ensure_installed() {
  is_installed || cmd_install
}

# A free TCP port on 127.0.0.1 (best effort: the port is released before Kafka binds it;
# `start` retries with new ports if the bind then fails).
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
  else
    local p
    for _ in $(seq 1 200); do
      p=$((20000 + RANDOM % 30000))
      if ! (exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        printf '%s\n' "$p"
        return 0
      fi
    done
    die "could not find a free port"
  fi
}

port_open() {
  (exec 9<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting with '-'.
new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* ]] && { printf '%s\n' "$id"; return 0; }
  done
}

# Is PID alive and a broker started for DIR (guards against pid reuse)?
broker_alive() {
  local pid="$1" dir="$2" t state live=1
  [[ -r "/proc/$pid/stat" ]] || return 1
  # A zombie leader can outlive its threads for a while (and this sandbox's init reaps
  # slowly): alive means some thread of the process is not a zombie.
  for t in /proc/"$pid"/task/*/stat; do
    state="$(sed 's/^.*) //' "$t" 2>/dev/null | cut -d' ' -f1)" || continue
    if [[ -n "$state" && "$state" != Z && "$state" != X ]]; then live=0; break; fi
  done
  ((live == 0)) || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/server.properties"
}

log_tail() {
  local dir="$1"
  {
    echo "----- tail of $dir/kafka.log -----"
    tail -n 60 "$dir/kafka.log" 2>/dev/null || true
    if [[ -s "$dir/kafka.out" ]]; then
      echo "----- tail of $dir/kafka.out -----"
      tail -n 30 "$dir/kafka.out" || true
    fi
    echo "-----"
  } >&2
}

write_config() {
  local dir="$1" port="$2" cport="$3"
  local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
  local advertised="PLAINTEXT://127.0.0.1:$port"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  local secure=""
  if [[ -n "${ODRADEK_KAFKA_SECURE:-}" ]]; then
    local pki name proto p
    pki="$(cd "$ODRADEK_KAFKA_SECURE" && pwd -P)"
    : >"$dir/listeners.env"
    for name in SSL MTLS SASL_SSL SASL_PLAINTEXT; do
      p="$(free_port)"
      while [[ "$p" == "$port" || "$p" == "$cport" ]] || grep -q ":$p\$" "$dir/listeners.env"; do p="$(free_port)"; done
      proto="$name"
      [[ "$name" == MTLS ]] && proto=SSL
      listeners+=",$name://127.0.0.1:$p"
      advertised+=",$name://127.0.0.1:$p"
      protocols+=",$name:$proto"
      echo "$name=127.0.0.1:$p" >>"$dir/listeners.env"
    done
    printf 'ALICE_PASSWORD=alice-secret\nADMIN_PASSWORD=admin-secret\n' >"$dir/users.env"
    local plain='org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
    local scram='org.apache.kafka.common.security.scram.ScramLoginModule required;'
    local oauth='org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";'
    secure="
# ODRADEK_KAFKA_SECURE: secured listeners (tests/security/certs.sh $pki)
ssl.keystore.type=PEM
ssl.keystore.location=$pki/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$pki/ca.pem
ssl.endpoint.identification.algorithm=
listener.name.mtls.ssl.client.auth=required
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:admin
allow.everyone.if.no.acl.found=true"
    # SASL_PLAINTEXT sessions last 3 s, so clients must re-authenticate (KIP-368) to stay.
    secure+="
listener.name.sasl_plaintext.connections.max.reauth.ms=3000"
    for name in sasl_ssl sasl_plaintext; do
      secure+="
listener.name.$name.plain.sasl.jaas.config=$plain
listener.name.$name.scram-sha-256.sasl.jaas.config=$scram
listener.name.$name.scram-sha-512.sasl.jaas.config=$scram
listener.name.$name.oauthbearer.sasl.jaas.config=$oauth"
    done
  fi
  cat >"$dir/server.properties" <<EOF
# Written by tests/compat/kafka.sh: single-node combined KRaft broker/controller on loopback.
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$NODE_ID@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data

num.partitions=4
default.replication.factor=1
auto.create.topics.enable=true
delete.topic.enable=true
group.initial.rebalance.delay.ms=0

offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=3

# Small and quiet for tests; Kafka's default flush policy (no fsync per message) is kept.
num.network.threads=2
num.io.threads=4
log.segment.bytes=104857600
$secure
EOF
  if [[ -n "${ODRADEK_KAFKA_EXTRA_PROPS:-}" ]]; then
    printf '\n# ODRADEK_KAFKA_EXTRA_PROPS\n%s\n' "$ODRADEK_KAFKA_EXTRA_PROPS" >>"$dir/server.properties"
  fi

  cat >"$dir/log4j2.properties" <<EOF
# Written by tests/compat/kafka.sh: broker log to $dir/kafka.log, INFO (noisy parts at WARN).
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $dir/kafka.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
EOF
}

format_storage() {
  local dir="$1" java="$2"
  # Static quorum (controller.quorum.voters): format WITHOUT --standalone.
  local scram=()
  if [[ -n "${ODRADEK_KAFKA_SECURE:-}" ]]; then
    local mech user
    for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
      for user in alice admin; do
        scram+=(--add-scram "$mech=[name=$user,password=$user-secret]")
      done
    done
  fi
  "$java" -Xmx256m -Dlog4j2.configurationFile="$TOOLS_LOG4J" -cp "$LIBS/*" \
    kafka.tools.StorageTool format -t "$(new_cluster_id)" -c "$dir/server.properties" \
    ${scram[@]+"${scram[@]}"} </dev/null >>"$dir/format.log" 2>&1 || {
    cat "$dir/format.log" >&2
    die "storage format failed"
  }
}

# Launch the broker; sets PID.
launch() {
  local dir="$1" java="$2"
  local heap jvm_opts
  read -r -a heap <<<"${ODRADEK_KAFKA_HEAP:--Xmx512m -Xms128m}"
  read -r -a jvm_opts <<<"${ODRADEK_KAFKA_JVM_OPTS:-}"
  : >"$dir/kafka.out"
  "$java" "${heap[@]}" \
    -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    ${jvm_opts[@]+"${jvm_opts[@]}"} \
    -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
    </dev/null >>"$dir/kafka.out" 2>&1 3>&- &
  PID=$!
  echo "$PID" >"$dir/pid"
}

# Wait for readiness. Returns 0 ready, 1 failed, 2 failed because a port was taken.
await_ready() {
  local dir="$1" port="$2" java="$3" deadline="$4"
  local phase=port
  while :; do
    if ! broker_alive "$PID" "$dir"; then
      if grep -qE 'Address already in use|BindException' "$dir/kafka.log" "$dir/kafka.out" 2>/dev/null; then
        return 2
      fi
      log "broker process $PID exited during startup"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "broker not ready within ${ODRADEK_KAFKA_START_TIMEOUT:-120}s (waiting for: $phase)"
      return 1
    fi
    case "$phase" in
      port)
        port_open "$port" && phase=log
        ;;
      log)
        # KafkaRaftServer logs this once the broker is registered and unfenced.
        grep -qE 'Kafka Server started|started \(kafka\.server\.KafkaRaftServer\)' \
          "$dir/kafka.log" 2>/dev/null && phase=probe
        ;;
      probe)
        local left=$(((deadline - SECONDS) * 1000))
        ((left < 5000)) && left=5000
        if "$java" -Xmx64m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
          -Dlog4j2.configurationFile="$TOOLS_LOG4J" \
          -cp "$LIBS/*:$PROBE_DIR" ReadyProbe "127.0.0.1:$port" "$left" "$NODE_ID" </dev/null >&2; then
          return 0
        fi
        broker_alive "$PID" "$dir" || continue
        log "readiness probe failed"
        return 1
        ;;
    esac
    sleep 0.1
  done
}

kill_broker() {
  local dir="$1" pid="$2" timeout="${ODRADEK_KAFKA_STOP_TIMEOUT:-30}"
  broker_alive "$pid" "$dir" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  local end=$((SECONDS + timeout))
  while broker_alive "$pid" "$dir"; do
    if ((SECONDS >= end)); then
      log "broker $pid still running ${timeout}s after TERM: KILL"
      kill -KILL "$pid" 2>/dev/null || true
      local kend=$((SECONDS + 10))
      while broker_alive "$pid" "$dir"; do
        ((SECONDS >= kend)) && die "broker $pid survived KILL"
        sleep 0.1
      done
      break
    fi
    sleep 0.1
  done
}

cmd_start() {
  [[ $# -eq 1 ]] || die "usage: kafka.sh start DIR"
  mkdir -p "$1"
  local dir
  dir="$(cd "$1" && pwd -P)"
  if [[ -f "$dir/pid" ]] && broker_alive "$(cat "$dir/pid")" "$dir"; then
    die "a broker is already running in $dir (pid $(cat "$dir/pid")); stop it first"
  fi
  ensure_installed
  local java
  java="$(java_bin)"
  local timeout="${ODRADEK_KAFKA_START_TIMEOUT:-120}"
  local deadline=$((SECONDS + timeout))
  local attempt port cport rc
  for attempt in 1 2 3; do
    # Fresh broker every time: drop any earlier data and logs in DIR.
    rm -rf "$dir/data" "$dir/kafka.log" "$dir/kafka.out" "$dir/format.log" "$dir/pid"
    port="$(free_port)"
    cport="$(free_port)"
    while [[ "$cport" == "$port" ]]; do cport="$(free_port)"; done
    write_config "$dir" "$port" "$cport"
    format_storage "$dir" "$java"
    launch "$dir" "$java"
    log "start: broker pid $PID on 127.0.0.1:$port (controller $cport), dir $dir"
    rc=0
    await_ready "$dir" "$port" "$java" "$deadline" || rc=$?
    if ((rc == 0)); then
      log "start: ready after ${SECONDS}s"
      printf '127.0.0.1:%s\n' "$port" >&3
      return 0
    fi
    log_tail "$dir"
    kill_broker "$dir" "$PID" || true
    rm -f "$dir/pid"
    if ((rc == 2 && attempt < 3 && SECONDS < deadline)); then
      log "start: port taken, retrying with new ports"
      continue
    fi
    die "broker failed to start (see $dir/kafka.log)"
  done
}

cmd_stop() {
  [[ $# -eq 1 ]] || die "usage: kafka.sh stop DIR"
  [[ -d "$1" ]] || { log "stop: no such dir $1"; return 0; }
  local dir
  dir="$(cd "$1" && pwd -P)"
  [[ -f "$dir/pid" ]] || { log "stop: no pid file in $dir"; return 0; }
  local pid
  pid="$(cat "$dir/pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || die "bad pid file $dir/pid"
  if broker_alive "$pid" "$dir"; then
    kill_broker "$dir" "$pid"
    log "stop: broker $pid stopped"
  else
    log "stop: broker $pid not running"
  fi
  rm -f "$dir/pid"
}

cmd_classpath() {
  ensure_installed
  printf '%s\n' "$LIBS/*" >&3
}

cmd_run() {
  [[ $# -ge 1 ]] || die "usage: kafka.sh run CLASS [ARGS...]"
  ensure_installed
  local java
  java="$(java_bin)"
  exec "$java" -Xmx512m -Dlog4j2.configurationFile="$TOOLS_LOG4J" -cp "$LIBS/*" "$@" 1>&3 3>&-
}

main() {
  local sub="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$sub" in
    install) cmd_install "$@" ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    classpath) cmd_classpath "$@" ;;
    run) cmd_run "$@" ;;
    *) die "usage: kafka.sh {install|start DIR|stop DIR|classpath|run CLASS [ARGS...]}" ;;
  esac
}

main "$@"
