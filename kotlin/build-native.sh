#!/usr/bin/env bash
# Builds the native half of the Kotlin package; run by Maven in `generate-sources`
# (pom.xml), usable by hand:
#
#   kotlin/build-native.sh PROFILE OUT      PROFILE: debug | release; OUT: Maven's target/
#
# 1. cargo build -p odradek-uniffi (the cdylib and the uniffi-bindgen binary of the same
#    uniffi version), in the workspace's own target dir (or CARGO_TARGET_DIR);
# 2. uniffi-bindgen in library mode writes the Kotlin bindings to
#    OUT/generated-sources/uniffi (package dev.odradek.kafka.ffi, see native/uniffi.toml);
# 3. the library goes to OUT/native/linux-x86-64/, a resource directory, so it is packaged in
#    the jar where JNA looks for it. Debug builds are stripped of debug info there (the
#    unstripped file stays in cargo's target dir for debuggers).
set -euo pipefail
profile=${1:?profile: debug or release}
out=${2:?output directory}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(dirname "$here")"
target=${CARGO_TARGET_DIR:-$root/target}
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x86-64; lib=libodradek_uniffi.so ;;
  Linux-aarch64) platform=linux-aarch64; lib=libodradek_uniffi.so ;;
  Darwin-x86_64) platform=darwin-x86-64; lib=libodradek_uniffi.dylib ;;
  Darwin-arm64) platform=darwin-aarch64; lib=libodradek_uniffi.dylib ;;
  *) echo "build-native.sh: unsupported platform $(uname -sm)" >&2; exit 1 ;;
esac
flags=()
[[ $profile == release ]] && flags=(--release)
(cd "$root" && cargo build -q -p odradek-uniffi --features bindgen "${flags[@]}")
built="$target/$profile/$lib"
rm -rf "$out/generated-sources/uniffi"
mkdir -p "$out/generated-sources/uniffi" "$out/native/$platform"
"$target/$profile/uniffi-bindgen" generate --library "$built" --language kotlin --no-format \
  --out-dir "$out/generated-sources/uniffi" >/dev/null
if [[ $profile == debug ]] && command -v strip >/dev/null; then
  strip --strip-debug -o "$out/native/$platform/$lib.tmp" "$built"
else
  cp "$built" "$out/native/$platform/$lib.tmp"
fi
mv "$out/native/$platform/$lib.tmp" "$out/native/$platform/$lib"
