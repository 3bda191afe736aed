#!/usr/bin/env bash
# Builds and tests the Kotlin package (kotlin/, uniffi over bindings/) on a fresh machine:
# `mvn verify` builds the native library (cargo, debug) and the uniffi bindings, compiles the
# Kotlin package, builds odradek-broker and runs the JUnit suite against odradek-broker and
# Apache Kafka 4.x.
#
#   kotlin/test.sh
#
# Environment (optional):
#   ODRADEK_TEST_KAFKA=host:port   an Apache Kafka already running (scripts/test.sh's compat
#                                  tier); otherwise one is started here (tests/compat/kafka.sh)
#                                  and stopped at the end
#   ODRADEK_BROKER_BIN             the odradek-broker binary (default target/debug/...)
#   MAVEN_ARGS                     extra arguments for mvn
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(dirname "$here")"

if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
  echo "kotlin/test.sh: installing Maven and a JDK (apt-get)" >&2
  apt-get update -qq && apt-get install -y -qq maven openjdk-17-jdk-headless >/dev/null
fi

kdir=""
cleanup() {
  if [[ -n "$kdir" ]]; then
    "$root/tests/compat/kafka.sh" stop "$kdir" >/dev/null 2>&1 || true
    rm -rf "$kdir"
  fi
}
trap cleanup EXIT
if [[ -z "${ODRADEK_TEST_KAFKA:-}" ]]; then
  kdir=$(mktemp -d)
  ODRADEK_TEST_KAFKA=$("$root/tests/compat/kafka.sh" start "$kdir")
fi
export ODRADEK_TEST_KAFKA

cd "$here"
start=$(date +%s)
set +e
# shellcheck disable=SC2086
mvn -B -ntp -Dstyle.color=never ${MAVEN_ARGS:-} verify 2>&1 |
  grep -vE '^\[INFO\] (Download|Copying|Building jar|--- |$)'
status=${PIPESTATUS[0]}
set -e
echo "kotlin/test.sh: mvn verify exited $status after $(( $(date +%s) - start )) s"
exit "$status"
