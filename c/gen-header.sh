#!/usr/bin/env bash
# Generates the C header c/include/odradek.h from c/src with cbindgen.
#
#   c/gen-header.sh           regenerate the checked-in header
#   c/gen-header.sh --check   regenerate into a temporary file and fail if the checked-in one
#                             differs (the test command runs this)
#
# cbindgen is installed on first use with `cargo install --locked` into the workspace's
# target/tools (pinned version below), so a fresh clone needs nothing but cargo.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/.." && pwd -P)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
CBINDGEN_VERSION=0.29.0
TOOLS="$TARGET/tools"
CBINDGEN="$TOOLS/bin/cbindgen"
HEADER="$HERE/include/odradek.h"

if [[ ! -x "$CBINDGEN" ]] || ! "$CBINDGEN" --version 2>/dev/null | grep -q "$CBINDGEN_VERSION"; then
  echo "gen-header.sh: installing cbindgen $CBINDGEN_VERSION into $TOOLS" >&2
  cargo install -q cbindgen --version "$CBINDGEN_VERSION" --locked --root "$TOOLS" >&2
fi

generate() {
  (cd "$ROOT" && "$CBINDGEN" --quiet --config "$HERE/cbindgen.toml" --crate odradek-c \
    --output "$1" "$HERE")
}

if [[ "${1:-}" == "--check" ]]; then
  tmp="$(mktemp)"
  trap 'rm -f "$tmp"' EXIT
  generate "$tmp"
  if ! diff -u "$HEADER" "$tmp"; then
    echo "gen-header.sh: c/include/odradek.h is stale: run c/gen-header.sh and commit the result" >&2
    exit 1
  fi
  echo "gen-header.sh: c/include/odradek.h is up to date" >&2
else
  generate "$HEADER"
  echo "gen-header.sh: wrote $HEADER" >&2
fi
