# Sourced by bench/python.sh and bench/failover.sh: installs ./python (release wheel, rebuilt
# every run: the wheel must be the tree being measured) and the Python peers
# (tests/compat/python-peers.txt) into $TARGET/bench-venv, and sets VENV.
# Needs ROOT and TARGET; run from the repository root.
VENV="$TARGET/bench-venv"
# A venv whose tools no longer run (moved or copied target dir, removed interpreter) is rebuilt.
if ! "$VENV/bin/pip" --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
"$VENV/bin/pip" install -q --force-reinstall --no-deps ./python
"$VENV/bin/pip" install -q -r tests/compat/python-peers.txt
