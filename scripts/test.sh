#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages), builds everything once and
# runs the whole test suite in parallel; then the sanitizer builds (ASan +
# UBSan + LSan of the core, codec, merge, registry, service and transport
# tests; TSan of the concurrent ones), and the libFuzzer harnesses for 60 s
# each from their seed corpora.
# This is the README's test command and what .ci/run calls.
# ENTROGRAD_SANITIZERS=0 skips the sanitizer builds and the fuzzing (for a
# quick local run); arguments go to the main ctest run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
start=$(date +%s)
bash scripts/build.sh
echo "test: build took $(( $(date +%s) - start )) s"
(cd "${ENTROGRAD_BUILD_DIR:-build}" && ctest --output-on-failure --timeout 900 -j"$(nproc)" "$@")
echo "test: build and tests took $(( $(date +%s) - start )) s"
if [[ "${ENTROGRAD_SANITIZERS:-1}" == 1 ]]; then
  bash scripts/test_sanitizers.sh
  echo "test: with the sanitizer builds $(( $(date +%s) - start )) s"
  bash scripts/test_fuzz.sh 60
  echo "test: with fuzzing $(( $(date +%s) - start )) s"
fi
