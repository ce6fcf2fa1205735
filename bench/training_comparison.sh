#!/usr/bin/env bash
# Trains the Fashion-MNIST CNN with entrograd-launch under several policies
# and with PyTorch DDP (gloo), same model, data order, seed, batch and
# epochs, one after another on this machine, and prints one JSON line per
# run. Also records the loopback interface's byte counters around each run
# (all processes' traffic, each byte counted as sent and as received).
#
# Usage: bash bench/training_comparison.sh [OUT_DIR] [EPOCHS] [WORKERS]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-out/comparison}"
EPOCHS="${2:-1}"
WORKERS="${3:-4}"
BUILD="${ENTROGRAD_BUILD_DIR:-build}"
mkdir -p "$OUT"

lo_bytes() { awk '/^ *lo:/ {printf "%.0f\n", $2 + $10}' /proc/net/dev; }

run_launcher() {
  local name="$1"; shift
  local before after
  before=$(lo_bytes)
  "$BUILD/workers/launcher/entrograd-launch" --workers "$WORKERS" --epochs "$EPOCHS" \
    --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  after=$(lo_bytes)
  /usr/bin/python3 - "$OUT/$name/summary.json" "$name" $((after - before)) <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
summary["run"] = sys.argv[2]
summary["loopback_bytes_rx_plus_tx"] = int(sys.argv[3])
print(json.dumps(summary))
PY
}

run_launcher dense --policy dense
run_launcher entropy --policy entropy --rho 0.01
run_launcher topk_0.004 --policy topk --rho 0.004
run_launcher topk_0.01 --policy topk --rho 0.01
/usr/bin/python3 bench/ddp_fashion_mnist.py --workers "$WORKERS" --epochs "$EPOCHS" \
  --json_out "$OUT/ddp.json" > "$OUT/ddp.log" 2>&1
cat "$OUT/ddp.json"; echo
