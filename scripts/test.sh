#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages), builds everything once and
# runs the whole test suite in parallel. This is the README's test command
# and what .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
start=$(date +%s)
bash scripts/build.sh
echo "test: build took $(( $(date +%s) - start )) s"
cd "${ENTROGRAD_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j"$(nproc)" "$@"
