#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (ASan + UBSan,
# coverage-instrumented project code) and runs each for a bounded time from
# its committed seed corpus. New inputs go to a scratch corpus, never into
# the repository. A crash, leak, sanitizer report or timeout fails the run
# and leaves the reproducer under build-fuzz/artifacts/.
#
# Usage: bash scripts/test_fuzz.sh [SECONDS_PER_HARNESS]   (default 60)
# Called by scripts/test.sh. For a long run (docs/BENCHMARKS.md records
# 10-minute runs): bash scripts/test_fuzz.sh 600
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_HARNESS="${1:-60}"
DIR=build-fuzz
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# Line tables (-g1) are all a sanitizer report needs to name file and line;
# full debug info and -O2 cost a third more compile time for nothing here.
# ccache may ignore the directory the debug info names: a clone elsewhere hits.
SANITIZER_OPT_FLAGS="-O1 -g1 -DNDEBUG"
export CCACHE_NOHASHDIR=1
HARNESSES=(payload_decode npy_reader job_registry)

if [[ ! -f "$DIR/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_FLAGS_RELEASE="$SANITIZER_OPT_FLAGS" -DCMAKE_C_FLAGS_RELEASE="$SANITIZER_OPT_FLAGS" \
    -DENTROGRAD_FUZZ=ON -DENTROGRAD_BUILD_TESTS=OFF -DENTROGRAD_BUILD_BENCH=OFF \
    -DENTROGRAD_WITH_TORCH=OFF -DENTROGRAD_CUDA=OFF \
    -DENTROGRAD_SANITIZE=address,undefined,fuzzer-no-link >"$DIR.configure.log" 2>&1 || {
    cat "$DIR.configure.log"; echo "fuzz: configure failed" >&2; exit 1; }
fi
ninja -C "$DIR" -j"$(nproc)" "${HARNESSES[@]/%/_fuzzer}"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p "$DIR/artifacts"
# The harnesses run side by side (each is one process): the run takes
# SECONDS_PER_HARNESS, not three times that.
pids=()
for harness in "${HARNESSES[@]}"; do
  scratch="$DIR/corpus/$harness"
  mkdir -p "$scratch"
  echo "fuzz: $harness for ${SECONDS_PER_HARNESS}s"
  # -timeout: one input taking longer than 10 s is a hang, and a failure.
  "$DIR/tests/fuzz/${harness}_fuzzer" -max_total_time="$SECONDS_PER_HARNESS" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$DIR/artifacts/${harness}-" \
      "$scratch" "tests/fuzz/corpus/$harness" >"$DIR/$harness.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!HARNESSES[@]}"; do
  harness="${HARNESSES[$i]}"
  if ! wait "${pids[$i]}"; then
    echo "fuzz: $harness FAILED; last lines of $DIR/$harness.log:" >&2
    tail -n 40 "$DIR/$harness.log" >&2
    status=1
  fi
  echo "fuzz: $harness"
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)|cov: " "$DIR/$harness.log" | tail -n 3
done
exit $status
