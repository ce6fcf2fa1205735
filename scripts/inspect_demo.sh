#!/usr/bin/env bash
# The compressor on its own: sets up a fresh
# Debian 12 machine, builds entrograd, makes gradient-like layers (a small
# CNN's layer shapes, heavy-tailed values with per-layer structure) and shows
# what the compressor does to each: entropy, keep ratio, k and wire bytes
# under every encoding.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh entrograd-cli
OUT="${1:-out/demo}"
mkdir -p "$OUT"
/usr/bin/python3 scripts/make_demo_gradients.py "$OUT"
CLI="${ENTROGRAD_BUILD_DIR:-build}/client_lib/tools/entrograd-cli"
for policy in entropy topk; do
  echo
  echo "== policy: $policy (rho 0.01) =="
  "$CLI" inspect --policy "$policy" --rho 0.01 "$OUT"/*.npy
done
"$CLI" inspect --json --rho 0.01 "$OUT"/*.npy >"$OUT/inspect.json"
echo
echo "demo: JSON report written to $OUT/inspect.json"
