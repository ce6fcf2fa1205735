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

# -O2 without debug info: the same optimisation as RelWithDebInfo (the
# determinism tests compare bits across builds and paths), and about a fifth
# less compile and link time on the 2-core CI machine. The sanitizer builds
# keep line tables, so their reports name the file and line.
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    ${ENTROGRAD_CMAKE_ARGS:-} >"$BUILD_DIR.configure.log" 2>&1 || {
    cat "$BUILD_DIR.configure.log"
    echo "build: cmake configure failed (log above)" >&2
    exit 1
  }
fi
ninja -C "$BUILD_DIR" -j"$(nproc)" "$@"
