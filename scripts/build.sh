#!/usr/bin/env bash
# Configures and builds everything (tests, benchmarks, binaries) into
# ${ENTROGRAD_BUILD_DIR:-build}. One build serves every script; ccache keeps
# rebuilds cheap. Extra arguments go to ninja (e.g. a target name).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${ENTROGRAD_BUILD_DIR:-build}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# Relative paths in the cache keys: a fresh clone elsewhere (CI) still hits.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    ${ENTROGRAD_CMAKE_ARGS:-} >"$BUILD_DIR.configure.log" 2>&1 || {
    cat "$BUILD_DIR.configure.log"
    echo "build: cmake configure failed (log above)" >&2
    exit 1
  }
fi
ninja -C "$BUILD_DIR" -j"$(nproc)" "$@"
