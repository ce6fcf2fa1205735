#!/usr/bin/env bash
# The README's first command: sets up a fresh Debian 12 machine, builds
# entrograd, and runs the main job: a local data-parallel training run of the
# Fashion-MNIST CNN (the aggregator plus 4 worker processes on this machine)
# with entropy-based gradient compression, live progress, and a result
# summary (summary.json, summary.md, plot.svg) in out/train.
# Extra arguments go to entrograd-launch (e.g. --policy dense, --epochs 3,
# --workers 2, --max_steps 50).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh entrograd-aggregator entrograd-worker entrograd-launch
BUILD="${ENTROGRAD_BUILD_DIR:-build}"
OUT="out/train"
"$BUILD/workers/launcher/entrograd-launch" --out "$OUT" "$@"
echo
cat "$OUT/summary.md"
echo
echo "train: results in $OUT (summary.json, summary.md, plot.svg)"
