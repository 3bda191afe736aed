# Shared by the bench/client scripts (sourced, not run): the broker they measure against and
# the scenario filter. Expects `log` to be defined by the caller.

# start_broker BIN WORK [OVERRIDE...]: starts BIN on an ephemeral port with its data in
# WORK/data and the given `key=value` overrides; sets BROKER_PID and BOOTSTRAP, exits on failure.
start_broker() {
  local bin="$1" work="$2" line
  shift 2
  local args=(--override listeners=PLAINTEXT://127.0.0.1:0 --override "log.dirs=$work/data")
  for o in "$@"; do args+=(--override "$o"); done
  mkdir -p "$work/data"
  "$bin" "${args[@]}" >"$work/broker.out" 2>"$work/broker.err" &
  BROKER_PID=$!
  BOOTSTRAP=""
  for _ in $(seq 300); do
    line="$(head -n1 "$work/broker.out" 2>/dev/null || true)"
    if [[ "$line" == "odradek-broker listening on "* ]]; then
      BOOTSTRAP="${line#odradek-broker listening on }"
      return 0
    fi
    kill -0 "$BROKER_PID" 2>/dev/null || { cat "$work/broker.err" >&2; log "broker exited"; exit 1; }
    sleep 0.1
  done
  log "broker did not report its address"
  exit 1
}

# stop_broker: SIGTERM, then SIGKILL after 10 s, of the broker start_broker started.
stop_broker() {
  if [[ -n "${BROKER_PID:-}" ]] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BROKER_PID" 2>/dev/null || true
    wait "$BROKER_PID" 2>/dev/null || true
  fi
}

# only_matching: keeps the SCENARIOS whose name (first word) matches the regex in $ONLY.
only_matching() {
  [[ -n "${ONLY:-}" ]] || return 0
  local kept=() s
  for s in "${SCENARIOS[@]}"; do [[ "${s%% *}" =~ $ONLY ]] && kept+=("$s"); done
  SCENARIOS=("${kept[@]}")
}

# pick_bench_tmp: sets BENCH_TMP, unless already set, to /dev/shm when it has 4 GiB free (the
# broker's data in memory: no page-cache misses or writeback noise), else $TMPDIR or /tmp.
pick_bench_tmp() {
  [[ -n "${BENCH_TMP:-}" ]] && return 0
  BENCH_TMP="${TMPDIR:-/tmp}"
  if [[ -d /dev/shm && -w /dev/shm ]] \
    && (( $(df -Pk /dev/shm | awk 'NR==2 {print $4}') > 4 * 1024 * 1024 )); then
    BENCH_TMP=/dev/shm
  fi
}

# The Java client for JavaBench.java: kafka-clients and its codecs copied from
# tests/compat/kafka.sh's jars into $WORK/java (like the binaries: a change during the run must
# not change what is measured), JavaBench.java compiled against them. Needs ROOT, HERE, WORK and
# JAVA_OPTS; sets JAVA_BENCH (the command, an array) and JAVA_VERSION.
setup_java_bench() {
  local java=java javac=javac jar found
  if [[ -n "${JAVA_HOME:-}" ]]; then java="$JAVA_HOME/bin/java"; javac="$JAVA_HOME/bin/javac"; fi
  log "Kafka jars (tests/compat/kafka.sh install); javac JavaBench.java"
  "$ROOT/tests/compat/kafka.sh" install >&2
  local libs
  libs="$("$ROOT/tests/compat/kafka.sh" classpath)"
  mkdir -p "$WORK/java/libs" "$WORK/java/classes"
  for jar in kafka-clients lz4-java zstd-jni snappy-java slf4j-api log4j-api log4j-core log4j-slf4j-impl; do
    found=("${libs%/\*}/$jar"-[0-9]*.jar)
    [[ -e "${found[0]}" ]] || { log "no $jar jar in ${libs%/\*}"; exit 1; }
    cp "${found[0]}" "$WORK/java/libs/"
  done
  cp "$ROOT/tests/compat/.cache/kafka-tools-log4j2.properties" "$WORK/java/log4j2.properties"
  "$javac" -nowarn -d "$WORK/java/classes" -cp "$WORK/java/libs/*" "$HERE/JavaBench.java"
  # shellcheck disable=SC2206
  JAVA_BENCH=("$java" $JAVA_OPTS "-Dlog4j2.configurationFile=$WORK/java/log4j2.properties"
    -cp "$WORK/java/libs/*:$WORK/java/classes" JavaBench)
  JAVA_VERSION="$("$java" -version 2>&1 | sed -n 2p)"
}

# fail_cell client scenario repeat message: writes (into $OUT) the failed cell into the results file (so the
# run's file shows it) and stops the family with exit 1.
fail_cell() {
  python3 -c 'import json, sys
c, s, r, e = sys.argv[1:5]
print(json.dumps({"failed": True, "client": c, "scenario": s, "repeat": int(r),
                  "warmup": r == "0", "error": e[-2000:]}))' "$@" >>"$OUT"
  log "FAILED: $2 $1 run $3: $4"
  exit 1
}
