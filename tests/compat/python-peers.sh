#!/usr/bin/env bash
# Python peers for the compatibility tier: confluent-kafka (librdkafka) and kafka-python,
# with every compression codec kafka-python can use, in a venv at .cache/venv.
#
#   python-peers.sh install   create the venv if missing, install python-peers.txt (no-op when
#                             already installed from the same file); prints the venv's python
#   python-peers.sh python    print the venv's python (fails if not installed)
#
# stdout carries only the python path; everything else goes to stderr.
# Environment: ODRADEK_PYTHON: the python3 (3.9+) to build the venv from (default: python3).
set -euo pipefail
exec 3>&1 1>&2

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
VENV="$HERE/.cache/venv"
PY="$VENV/bin/python"
REQS="$HERE/python-peers.txt"
STAMP="$VENV/.odradek-stamp"

log() { printf 'python-peers.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

wanted_stamp() {
  { "$PY" -c 'import sys; print(sys.version)'; cat "$REQS"; } | sha256sum | cut -d' ' -f1
}

is_installed() {
  [[ -x "$PY" && -f "$STAMP" ]] && [[ "$(cat "$STAMP")" == "$(wanted_stamp)" ]]
}

check_imports() {
  "$PY" - <<'PY'
import confluent_kafka, kafka, lz4.frame, snappy, cramjam, zstandard
from kafka.codec import has_gzip, has_snappy, has_lz4, has_zstd
missing = [n for n, ok in (("gzip", has_gzip()), ("snappy", has_snappy()),
                           ("lz4", has_lz4()), ("zstd", has_zstd())) if not ok]
if missing:
    raise SystemExit("kafka-python lacks codecs: %s" % ", ".join(missing))
import sys
print("confluent-kafka %s (librdkafka %s), kafka-python %s" % (
    confluent_kafka.__version__, confluent_kafka.libversion()[0], kafka.__version__),
    file=sys.stderr)
PY
}

cmd_install() {
  mkdir -p "$HERE/.cache"
  if command -v flock >/dev/null 2>&1 && [[ -z "${ODRADEK_PY_INSTALL_LOCKED:-}" ]]; then
    export ODRADEK_PY_INSTALL_LOCKED=1
    exec flock "$HERE/.cache/.venv-install.lock" "$HERE/python-peers.sh" install 1>&3 3>&-
  fi
  if ! [[ -x "$PY" ]]; then
    local base="${ODRADEK_PYTHON:-python3}"
    command -v "$base" >/dev/null 2>&1 || die "$base not found"
    log "install: creating venv $VENV with $("$base" --version 2>&1)"
    rm -rf "$VENV"
    "$base" -m venv "$VENV" </dev/null
  fi
  if is_installed; then
    log "install: up to date ($VENV)"
  else
    log "install: pip install -r $REQS"
    rm -f "$STAMP"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install -q --no-input -r "$REQS" </dev/null >&2 ||
      die "pip install failed"
    check_imports || die "installed packages do not import"
    wanted_stamp >"$STAMP"
  fi
  printf '%s\n' "$PY" >&3
}

cmd_python() {
  is_installed || die "not installed: run $HERE/python-peers.sh install"
  printf '%s\n' "$PY" >&3
}

case "${1:-}" in
  install) shift; cmd_install "$@" ;;
  python) shift; cmd_python "$@" ;;
  *) die "usage: python-peers.sh {install|python}" ;;
esac
