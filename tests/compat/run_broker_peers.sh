#!/usr/bin/env bash
# Third-party clients (confluent-kafka, kafka-python) against odradek-broker:
# tests/compat/test_broker_peers.py, test_groups.py, test_groups_kip848.py and test_transactions.py under pytest, in the
# venv of python-peers.sh.
#
#   tests/compat/run_broker_peers.sh [pytest args...]
#
# Uses the broker binary named by ODRADEK_BROKER_BIN; without it, builds the debug binary
# (cargo build -q -p odradek-broker, from the repository root) and uses target/debug/odradek-broker.
# Extra arguments go to pytest (e.g. -k roundtrip, -x); naming a test file (or file::test, or a
# directory) runs just that instead of both files. Exits with pytest's exit code.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/../.." && pwd -P)"

log() { printf 'run_broker_peers.sh: %s\n' "$*" >&2; }

py="$("$HERE/python-peers.sh" install)"

if [[ -n "${ODRADEK_BROKER_BIN:-}" ]]; then
  [[ -x "$ODRADEK_BROKER_BIN" ]] || { log "ODRADEK_BROKER_BIN=$ODRADEK_BROKER_BIN is not an executable"; exit 1; }
else
  log "building odradek-broker (debug)"
  (cd "$ROOT" && cargo build -q -p odradek-broker)
  ODRADEK_BROKER_BIN="$ROOT/target/debug/odradek-broker"
  export ODRADEK_BROKER_BIN
fi
log "broker: $ODRADEK_BROKER_BIN"
# Odradek's own consumer reads what the third-party producers wrote (consume_dump example).
(cd "$ROOT" && cargo build -q -p odradek --example consume_dump)

cd "$ROOT"
# Both suites unless the arguments name test files themselves (path.py, path.py::test, a directory).
files=(tests/compat/test_broker_peers.py tests/compat/test_groups.py tests/compat/test_groups_kip848.py tests/compat/test_transactions.py)
for arg in "$@"; do
  case "$arg" in
    -*) ;;
    *.py|*.py::*) files=(); break ;;
    *) [[ -d "$arg" ]] && { files=(); break; } ;;
  esac
done
set +e
"$py" -m pytest -q -p no:cacheprovider "${files[@]}" "$@"
rc=$?
set -e
exit "$rc"
