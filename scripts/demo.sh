#!/usr/bin/env bash
# The main job in one command: build and start the reference broker on a free port with a fresh
# data directory, run a produce/fetch round trip against it, and stop it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# ODRADEK_PROFILE=debug reuses the test build (the test script does this).
profile=${ODRADEK_PROFILE:-release}
flag=--release
[[ "$profile" == debug ]] && flag=
cargo build $flag -q -p odradek-broker
cargo build $flag -q -p odradek --example round_trip
target=${CARGO_TARGET_DIR:-target}
data=$(mktemp -d)
out=$(mktemp)
$target/$profile/odradek-broker --override listeners=PLAINTEXT://127.0.0.1:0 \
  --override "log.dirs=$data" >"$out" 2>"$data.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data" "$data.log" "$out"' EXIT
for _ in $(seq 1 200); do
  grep -q "listening on" "$out" && break
  kill -0 $pid 2>/dev/null || { cat "$data.log" >&2; exit 1; }
  sleep 0.05
done
addr=$(sed -n 's/^odradek-broker listening on //p' "$out")
[[ -n "$addr" ]] || { echo "broker did not start" >&2; cat "$data.log" >&2; exit 1; }
echo "odradek-broker listening on $addr (data in $data)"
$target/$profile/examples/round_trip "$addr"
