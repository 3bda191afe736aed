#!/usr/bin/env bash
# Tests libodradek (the C library): called by scripts/test.sh, safe to run by hand.
#
#   c/test.sh                 everything below, against a debug build of the library
#   PROFILE=release c/test.sh the same against the release build
#
# Steps:
#   1. c/include/odradek.h is what cbindgen generates from c/src (c/gen-header.sh --check);
#   2. `make -C c` builds the library, the examples and the tests (plain and -fsanitize=address);
#   3. one odradek-broker on a free port with a fresh data directory;
#   4. every c/tests/test_*.c program three times: plain, under valgrind (definite leaks and
#      invalid accesses fail; c/tests/valgrind.supp documents the only suppressions), and
#      built with AddressSanitizer (LeakSanitizer on);
#   5. the examples (examples/c: producer and consumer, librdkafka's examples' twins, the
#      producer fed lines on stdin and also statically linked, the consumer stopped with SIGINT
#      once it printed every message; commit_retry against its own odk_test_cluster);
#   6. `make install` into a temporary prefix and the README's compile line
#      (cc app.c $(pkg-config --cflags --libs odradek)) on an example.
# Prints one line per check and "c: N passed, M failed"; exits non-zero on any failure.
#
# Environment: ODRADEK_BROKER_BIN (default: the workspace's debug odradek-broker, built here),
# CARGO_TARGET_DIR (honoured), ODK_SKIP_VALGRIND=1 (skip step 4's valgrind runs).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(cd "$HERE/.." && pwd -P)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PROFILE="${PROFILE:-debug}"
BUILD="$HERE/build/$PROFILE"

passed=0
failed=0
failures=()
log() { printf 'c/test.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
record() { # record NAME STATUS
  if [[ "$2" == 0 ]]; then
    passed=$((passed + 1)); printf 'ok   %s\n' "$1"
  else
    failed=$((failed + 1)); failures+=("$1"); printf 'FAIL %s\n' "$1"
  fi
}

work="$(mktemp -d)"
broker_pid=""
cleanup() {
  if [[ -n "$broker_pid" ]] && kill -0 "$broker_pid" 2>/dev/null; then
    kill -TERM "$broker_pid" 2>/dev/null
    wait "$broker_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The checked-in header is current.
"$HERE/gen-header.sh" --check >/dev/null
record "header: c/include/odradek.h matches cbindgen's output" $?

# 2. Build (installing the C toolchain, valgrind and pkg-config with apt on a fresh machine).
missing=()
for tool in cc make pkg-config valgrind; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  if command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
    log "installing ${missing[*]} with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        gcc make pkg-config valgrind; } >"$work/apt.log" 2>&1 \
      || { cat "$work/apt.log" >&2; die "apt-get install failed"; }
  else
    die "missing ${missing[*]}: install them (gcc make pkg-config valgrind)"
  fi
fi
make -s -C "$HERE" PROFILE="$PROFILE" all >"$work/make.log" 2>&1 \
  || { cat "$work/make.log" >&2; die "make -C c failed"; }

# 3. A broker on a free port.
broker="${ODRADEK_BROKER_BIN:-}"
if [[ -z "$broker" ]]; then
  (cd "$ROOT" && cargo build -q -p odradek-broker) || die "cargo build -p odradek-broker failed"
  broker="$TARGET/debug/odradek-broker"
fi
mkdir -p "$work/data"
"$broker" --override listeners=PLAINTEXT://127.0.0.1:0 --override "log.dirs=$work/data" \
  --override num.partitions=3 --override group.initial.rebalance.delay.ms=0 \
  >"$work/broker.out" 2>"$work/broker.err" </dev/null &
broker_pid=$!
bootstrap=""
for _ in $(seq 1 300); do
  bootstrap="$(sed -n 's/^odradek-broker listening on \([^ ]*\)$/\1/p' "$work/broker.out" | head -n1)"
  [[ -n "$bootstrap" ]] && break
  kill -0 "$broker_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$bootstrap" ]] || { tail -n 40 "$work/broker.err" >&2; die "the broker did not start"; }
export ODK_TEST_BOOTSTRAP="$bootstrap"
log "broker at $bootstrap ($broker)"

run() { # run NAME COMMAND...: records the outcome; output kept for failures
  local name="$1"; shift
  local out="$work/$(echo "$name" | tr -c 'a-zA-Z0-9_-' _).log"
  "$@" >"$out" 2>&1
  local status=$?
  record "$name" "$status"
  if [[ "$status" != 0 ]]; then
    # The program's own lines first (a failed CHECK), then the tail (valgrind's report).
    grep -v '^==[0-9]*==' "$out" | tail -n 20 | sed 's/^/    /' >&2
    tail -n 60 "$out" | sed 's/^/    /' >&2
  fi
}

# 4. Test programs: plain, valgrind, AddressSanitizer.
export ODRADEK_RUNTIME_THREADS="${ODRADEK_RUNTIME_THREADS:-2}"
for t in "$BUILD"/tests/test_*; do
  name="$(basename "$t")"
  run "$name" "$t"
  if [[ -z "${ODK_SKIP_VALGRIND:-}" ]]; then
    run "$name (valgrind)" valgrind -q --leak-check=full --errors-for-leak-kinds=definite,possible \
      --num-callers=40 \
      --error-exitcode=1 --suppressions="$HERE/tests/valgrind.supp" "$t"
  fi
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=1" \
    run "$name (AddressSanitizer)" "$BUILD/tests-asan/$name"
done

# 5. Examples.
produce_lines() { # produce_lines N PROGRAM ARGS...: PROGRAM reads N lines ("message 1", ...)
  local n="$1"; shift
  seq -f 'message %g' 1 "$n" | "$@"
}
consume_until() { # consume_until N PROGRAM ARGS...: SIGINT once PROGRAM printed N messages
  local n="$1"; shift
  local out
  out="$(mktemp -p "$work")"
  "$@" >"$out" &
  local pid=$!
  for _ in $(seq 1 600); do
    [[ "$(grep -c '^Message on ' "$out")" -ge "$n" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 0.5 # a message beyond the N expected would show up now
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  local status=$?
  local got
  got="$(grep -c '^Message on ' "$out")"
  echo "printed $got messages (expected $n); exit status $status"
  [[ "$status" == 0 && "$got" == "$n" ]]
}
ex_topic="c-examples-$$-$RANDOM"
run "example: producer" produce_lines 25 "$BUILD/examples/producer" "$bootstrap" "$ex_topic"
run "example: producer (static libodradek.a)" produce_lines 25 "$BUILD/examples/producer-static" "$bootstrap" "$ex_topic"
run "example: consumer (classic group)" consume_until 50 "$BUILD/examples/consumer" "$bootstrap" "c-examples-$$" classic "$ex_topic"
run "example: consumer (consumer protocol group)" consume_until 50 "$BUILD/examples/consumer" "$bootstrap" "c-examples-848-$$" consumer "$ex_topic"
# docs/testing.md's example: its own in-process cluster, no broker needed.
run "example: commit_retry (odk_test_cluster)" "$BUILD/examples/commit_retry"

# 6. Install into a prefix and build with the README's pkg-config line.
prefix="$work/prefix"
if make -s -C "$HERE" PROFILE="$PROFILE" install PREFIX="$prefix" >"$work/install.log" 2>&1; then
  # shellcheck disable=SC2046
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
    cc "$ROOT/examples/c/producer.c" -o "$work/app" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs odradek) \
    >>"$work/install.log" 2>&1
  record "install: make install PREFIX=... and cc app.c \$(pkg-config --cflags --libs odradek)" $?
  run "install: the pkg-config-built producer runs" produce_lines 5 env LD_LIBRARY_PATH="$prefix/lib" "$work/app" "$bootstrap" "$ex_topic-pc"
else
  cat "$work/install.log" >&2
  record "install: make install PREFIX=..." 1
fi

if ! kill -0 "$broker_pid" 2>/dev/null; then
  record "broker still running at the end" 1
  tail -n 40 "$work/broker.err" >&2
fi

printf 'c: %d passed, %d failed\n' "$passed" "$failed"
if [[ "$failed" != 0 ]]; then
  printf '  failed: %s\n' "${failures[@]}" >&2
  exit 1
fi
