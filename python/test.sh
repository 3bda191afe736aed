#!/usr/bin/env bash
# Builds the odradek Python package into python/.venv and runs its test suite (python/tests)
# against a real odradek-broker. Called by scripts/test.sh; safe to run by hand.
#
#   python/test.sh [pytest args...]          the whole suite
#   python/test.sh tests/test_x.py [args]    only that file
#
# Idempotent and fast when nothing changed: the venv is created and its requirements installed
# once (a stamp records what was installed), `maturin develop` rebuilds only what cargo finds
# changed (debug profile, the workspace's target/), and the broker binary is the workspace's.
#
# Environment:
#   ODRADEK_PYTHON            python3 (3.9+) to create the venv with (default: python3)
#   ODRADEK_BROKER_BIN        broker binary (default: $CARGO_TARGET_DIR or target/, debug build)
#   CARGO_TARGET_DIR          honoured; the extension is built in its python/ subdirectory
#   ODRADEK_CONFLUENT_PYTHON  a python with confluent-kafka for the drop-in check (default:
#                             tests/compat/python-peers.sh install)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/.." && pwd -P)"
VENV="$HERE/.venv"
PY="$VENV/bin/python"
REQS="$HERE/requirements-dev.txt"
STAMP="$VENV/.odradek-stamp"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

log() { printf 'python/test.sh: %s\n' "$*" >&2; }

if [[ ! -x "$PY" ]]; then
  base="${ODRADEK_PYTHON:-python3}"
  log "creating $VENV with $("$base" --version 2>&1)"
  "$base" -m venv "$VENV" </dev/null
fi
wanted="$({ "$PY" -c 'import sys; print(sys.version)'; cat "$REQS"; } | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$wanted" ]]; then
  log "installing $REQS"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -q --no-input -r "$REQS" </dev/null >&2
  printf '%s\n' "$wanted" >"$STAMP"
fi

# A target directory of its own: maturin builds pyo3 for an extension module (no libpython
# linking), cargo test/clippy for the workspace do not; sharing target/ would rebuild pyo3 and
# this crate every time the two alternate.
log "maturin develop (debug, $TARGET/python)"
(cd "$HERE" && CARGO_TARGET_DIR="$TARGET/python" VIRTUAL_ENV="$VENV" \
  "$VENV/bin/maturin" develop -q --manifest-path "$HERE/Cargo.toml" </dev/null >&2)

if [[ -z "${ODRADEK_BROKER_BIN:-}" ]]; then
  export ODRADEK_BROKER_BIN="$TARGET/debug/odradek-broker"
  (cd "$ROOT" && cargo build -q -p odradek-broker)
fi
if [[ -z "${ODRADEK_CONFLUENT_PYTHON:-}" && -z "${ODRADEK_SKIP_COMPAT:-}" ]]; then
  ODRADEK_CONFLUENT_PYTHON="$("$ROOT/tests/compat/python-peers.sh" install)"
  export ODRADEK_CONFLUENT_PYTHON
fi

cd "$HERE"
if [[ $# -gt 0 && -f "$1" ]]; then
  # `python/test.sh tests/test_x.py [args]`: only those tests.
  exec "$PY" -m pytest -q -p no:cacheprovider "$@"
fi
exec "$PY" -m pytest -q -p no:cacheprovider tests "$@"
