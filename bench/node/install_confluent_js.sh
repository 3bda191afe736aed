#!/usr/bin/env bash
# Installs @confluentinc/kafka-javascript (pinned below) for bench/node/bench.mjs into a cache
# directory and prints that directory (load the package with
# createRequire(<dir>/package.json)('@confluentinc/kafka-javascript')).
#
#   bench/node/install_confluent_js.sh [DIR]     default: bench/node/.cache/confluent-js
#
# Why not plain `npm install`: the package's install script downloads a prebuilt addon from
# GitHub, and failing that builds its bundled librdkafka with mklove's
# `--install-deps --source-deps-only`, which downloads zlib/OpenSSL/zstd/curl sources from
# their upstream sites; neither works without general internet access. And Debian's librdkafka
# (2.0.2, `BUILD_LIBRDKAFKA=0`) is too old for the addon's sources. So this script installs the
# package with --ignore-scripts and builds it with node-gyp in the package's own
# `CKJS_LINKING=dynamic` mode (binding.gyp, deps/librdkafka.gyp, util/configure.js): the bundled
# librdkafka (the version the package pins) is configured without `--install-deps`, so its
# configure uses the system libraries from the Debian -dev packages below, and is installed as
# a shared library into the package's build/deps, which the addon finds through its rpath
# ($ORIGIN/../deps), not the system librdkafka. One change to the package: the librdkafka
# `make -j` (no limit) becomes `make -j$(nproc)`.
#
# Skips everything when DIR already holds a build of this version that loads. The librdkafka
# build takes a few minutes on 2 cores.
set -euo pipefail

VERSION=1.10.1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
dir="${1:-$root/bench/node/.cache/confluent-js}"
pkg="$dir/node_modules/@confluentinc/kafka-javascript"
stamp="$dir/.built-$VERSION-dynamic"
log="$dir/build.log"

fail() { echo "install_confluent_js.sh: $*" >&2; exit 1; }

# Loads the package and prints its librdkafka version and features (fails if it does not load).
check() {
  (cd "$dir" && node -e "
    const k = require('@confluentinc/kafka-javascript')
    if (k.librdkafkaVersion !== require('@confluentinc/kafka-javascript/package.json').librdkafka)
      throw new Error('addon linked against librdkafka ' + k.librdkafkaVersion)
    console.log('librdkafka ' + k.librdkafkaVersion + ': ' + k.features.join(','))")
}

if [ -f "$stamp" ] && check >/dev/null 2>&1; then
  echo "$dir"
  exit 0
fi

# 1. Build tools and the libraries librdkafka's configure looks for (zlib, OpenSSL, zstd, lz4,
#    libcurl for OIDC, Cyrus SASL for GSSAPI). All from Debian.
apt_packages=(g++ make python3 pkg-config zlib1g-dev libssl-dev libzstd-dev liblz4-dev
  libcurl4-openssl-dev libsasl2-dev)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install_confluent_js.sh: installing Debian packages: ${missing[*]}" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  { "${sudo[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"; } >&2 || fail "apt-get install ${missing[*]} failed"
fi

# 2. The package, without its install script.
mkdir -p "$dir"
cat >"$dir/package.json" <<EOF
{
  "name": "odradek-bench-confluent-js",
  "private": true,
  "dependencies": { "@confluentinc/kafka-javascript": "$VERSION" }
}
EOF
rm -f "$stamp"
(cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error </dev/null >&2) ||
  fail "npm install --ignore-scripts @confluentinc/kafka-javascript@$VERSION failed"
[ "$(node -p "require('$pkg/package.json').version")" = "$VERSION" ] ||
  fail "$pkg is not version $VERSION"

# 3. Bounded parallelism for the librdkafka build (the package runs an unbounded `make -j`).
gyp="$pkg/deps/librdkafka.gyp"
jobs="$(nproc)"
sed -i -E "s/\"make\", \"-j[0-9]*\"/\"make\", \"-j$jobs\"/" "$gyp"
grep -q "\"make\", \"-j$jobs\"" "$gyp" || fail "could not patch the make -j of $gyp"

# 4. Build: node-gyp bundled with npm; Node's headers from the system package when present
#    (else node-gyp downloads them from nodejs.org). node-gyp's own make runs serially: with
#    -j the generated Makefile races the configure action ("No rule to make target
#    '../deps/librdkafka/config.h'").
node_gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
[ -f "$node_gyp" ] || fail "node-gyp not found at $node_gyp (expected inside npm)"
nodedir=()
if [ -f /usr/include/node/node.h ] &&
   grep -q "NODE_MAJOR_VERSION $(node -p 'process.versions.node.split(".")[0]')\$" /usr/include/node/node_version.h; then
  nodedir=(--nodedir=/usr)
fi
echo "install_confluent_js.sh: building @confluentinc/kafka-javascript $VERSION (librdkafka" \
  "$(node -p "require('$pkg/package.json').librdkafka")) with $jobs jobs, log in $log" >&2
started=$SECONDS
(cd "$pkg" && CKJS_LINKING=dynamic BUILD_LIBRDKAFKA=1 \
  node "$node_gyp" rebuild --release "${nodedir[@]}" </dev/null >"$log" 2>&1) ||
  { tail -n 40 "$log" >&2; fail "node-gyp rebuild failed (full log: $log)"; }
grep -E "^(checking for|building dependency) (libssl|libcrypto|zlib|libzstd|liblz4|libcurl|libsasl2)" "$log" >&2 || true

features="$(check 2>&1)" || { echo "$features" >&2; fail "the built addon does not load"; }
echo "install_confluent_js.sh: built in $((SECONDS - started)) s; $features" >&2
touch "$stamp"
echo "$dir"
