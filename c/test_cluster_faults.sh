#!/usr/bin/env bash
# libodradek's fault test on a 3-node Apache Kafka (issue 27): c/tests/cluster_faults.c.
# Not part of c/test.sh (whose test_*.c programs run against one odradek-broker); scripts/test.sh
# (CI) runs it after the C step unless ODRADEK_SKIP_COMPAT is set. By hand:
#
#   c/test_cluster_faults.sh                  against a debug build of the library
#   PROFILE=release c/test_cluster_faults.sh  the same against the release build
#
# Steps:
#   1. `make -C c PROFILE=... cluster-faults` builds the library and the program
#      (c/build/<profile>/tests/cluster_faults);
#   2. tests/cluster/kafka-cluster.sh starts 3 KRaft nodes in a fresh temporary directory
#      (Java 17+ and the Kafka jars of tests/compat/kafka.sh install; about 30-60 s), stopped
#      and removed by an EXIT trap;
#   3. the program runs with the bootstrap list and the harness: an idempotent acks=all
#      producer and a two-member consumer group committing synchronously every second through
#      a leader kill, a 9 s pause, a controller kill and a 10 s cut; then the log is checked
#      (every acknowledged record once, at its offset, in send order) and no commit may have
#      failed with UNKNOWN_MEMBER_ID; it prints progress lines, a "summary:" line, and names
#      what failed.
# Takes about 2.5 minutes (c/README.md, docs/resilience.md) besides the build. Exits non-zero
# when the build, the cluster or the program fails.
#
# The C API has no call naming partition leaders, so the program asks this script
# (`c/test_cluster_faults.sh --leaders BOOTSTRAP TOPIC`, "PARTITION LEADER" lines), which runs
# Kafka's own TopicCommand from the same jars.
#
# Environment: PROFILE (debug), CARGO_TARGET_DIR (honoured), ODRADEK_RUNTIME_THREADS (default 2),
# ODK_FAULT_KEEP=1 (keep the cluster directory, with every node's kafka.log, after the run),
# and those of tests/cluster/kafka-cluster.sh (ODRADEK_KAFKA_HEAP, ...).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/.." && pwd -P)"
HARNESS="$ROOT/tests/cluster/kafka-cluster.sh"
CACHE="$ROOT/tests/compat/.cache"

log() { printf 'c/test_cluster_faults.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

if [[ "${1:-}" == "--leaders" ]]; then
  [[ $# -eq 3 ]] || die "usage: $0 --leaders BOOTSTRAP TOPIC"
  java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  out="$("$java" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$CACHE/kafka-tools-log4j2.properties" -cp "$CACHE/kafka-libs/*" \
    org.apache.kafka.tools.TopicCommand --bootstrap-server "$2" --describe --topic "$3" \
    </dev/null 2>&1)" || die "TopicCommand --describe failed: $out"
  # "Topic: T	Partition: 0	Leader: 2	Replicas: 2,3,1	Isr: 2,3,1 ..."
  sed -n 's/.*Partition:[[:space:]]*\([0-9]*\)[[:space:]]*Leader:[[:space:]]*\([-0-9]*\).*/\1 \2/p' <<<"$out"
  exit 0
fi

PROFILE="${PROFILE:-debug}"
BUILD="$HERE/build/$PROFILE"
[[ -x "$HARNESS" ]] || die "no fault harness at $HARNESS"

work="$(mktemp -d "${TMPDIR:-/tmp}/odradek-c-cluster-XXXXXX")"
cleanup() {
  "$HARNESS" stop "$work/cluster" >/dev/null 2>&1 || true
  if [[ -n "${ODK_FAULT_KEEP:-}" ]]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. Build.
log "building (make -C c PROFILE=$PROFILE cluster-faults)"
make -s -C "$HERE" PROFILE="$PROFILE" cluster-faults >"$work/make.log" 2>&1 \
  || { cat "$work/make.log" >&2; die "make -C c cluster-faults failed"; }

# 2. The cluster.
log "starting a 3-node Kafka in $work/cluster"
bootstrap="$("$HARNESS" start "$work/cluster" 3 2>"$work/start.log")" \
  || { tail -n 40 "$work/start.log" >&2; die "the cluster did not start"; }
[[ -n "$bootstrap" ]] || die "the harness printed no bootstrap list"
log "cluster at $bootstrap"

# 3. The program.
export ODRADEK_RUNTIME_THREADS="${ODRADEK_RUNTIME_THREADS:-2}"
"$BUILD/tests/cluster_faults" "$bootstrap" "$HARNESS" "$work/cluster" "$HERE/test_cluster_faults.sh"
status=$?
if [[ "$status" == 0 ]]; then
  printf 'ok   c: cluster_faults (3-node Kafka: leader kill, pause, controller kill, cut)\n'
else
  printf 'FAIL c: cluster_faults (exit status %d)\n' "$status"
fi
exit "$status"
