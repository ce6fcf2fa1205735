#!/usr/bin/env bash
# Runs the PyTorch DDP (gloo) baseline, bench/ddp_fashion_mnist.py, with
# every rank on its own emulated host: entrograd-netns puts rank i in
# network namespace i, joined to the others through a bridge, each host
# link rate-limited (tc tbf, both directions) to --link. Rank i runs in
# single-rank mode, joins rank 0's TCP store at host 0's address and binds
# gloo to the namespace's eth0. Afterwards the bytes the host links carried
# (entrograd-netns --counters_out) are merged into DIR/ddp.json:
#   link, rate_bits_per_second, link_hosts (the per-host counters),
#   wire_tx_bytes_total (sum over hosts of bytes sent: every byte on the
#   wire once), wire_rx_bytes_total, wire_tx_bytes_per_step_per_rank
#   (wire_tx_bytes_total / steps / workers).
#
# Usage:
#   bash bench/ddp_link.sh --link 1gbit --workers 4 --out DIR \
#       [--timeout 600s] [--port 29500] [-- ARGS for ddp_fashion_mnist.py]
# e.g.
#   bash bench/ddp_link.sh --link 100mbit --workers 2 --out out/ddp_100mbit \
#       -- --model wide --batch_size 8 --max_steps 10
#
# Needs root (network namespaces). entrograd-netns is taken from
# build/workers/link_emulation/entrograd-netns, or $ENTROGRAD_NETNS.
# Exit status: entrograd-netns's (0 ok, 1 a rank failed, 77 link emulation
# unavailable here, 124 --timeout reached), or 2 for bad usage.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NETNS="${ENTROGRAD_NETNS:-$ROOT/build/workers/link_emulation/entrograd-netns}"
PYTHON=/usr/bin/python3

usage() {
  sed -n '14,19p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

LINK="" WORKERS="" OUT="" TIMEOUT="600s" PORT=29500
while [[ $# -gt 0 ]]; do
  case "$1" in
    --link) LINK="${2:?--link needs a value}"; shift 2 ;;
    --link=*) LINK="${1#*=}"; shift ;;
    --workers) WORKERS="${2:?--workers needs a value}"; shift 2 ;;
    --workers=*) WORKERS="${1#*=}"; shift ;;
    --out) OUT="${2:?--out needs a value}"; shift 2 ;;
    --out=*) OUT="${1#*=}"; shift ;;
    --timeout) TIMEOUT="${2:?--timeout needs a value}"; shift 2 ;;
    --timeout=*) TIMEOUT="${1#*=}"; shift ;;
    --port) PORT="${2:?--port needs a value}"; shift 2 ;;
    --port=*) PORT="${1#*=}"; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "ddp_link.sh: unknown argument $1" >&2; usage ;;
  esac
done
[[ -n "$LINK" && -n "$WORKERS" && -n "$OUT" ]] || usage
[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || { echo "ddp_link.sh: --workers must be >= 1" >&2; exit 2; }
if [[ ! -x "$NETNS" ]]; then
  echo "ddp_link.sh: no entrograd-netns at $NETNS (build it, or set ENTROGRAD_NETNS)" >&2
  exit 77
fi

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
rm -f "$OUT/ddp.json" "$OUT/link_counters.json"

# Every argument is the same for every host but for the placeholders
# {host} and {addr0}, which entrograd-netns fills in per host.
set +e
"$NETNS" --hosts="$WORKERS" --link="$LINK" --timeout="$TIMEOUT" \
    --counters_out="$OUT/link_counters.json" -- \
    "$PYTHON" "$ROOT/bench/ddp_fashion_mnist.py" \
    --rank '{host}' --world_size "$WORKERS" --master_addr '{addr0}' \
    --master_port "$PORT" --ifname eth0 --json_out "$OUT/ddp.json" "$@" \
    2>&1 | tee "$OUT/ddp_link.log"
status=${PIPESTATUS[0]}
set -e
if [[ $status -ne 0 ]]; then
  case $status in
    77) echo "ddp_link.sh: link emulation unavailable here (see above)" >&2 ;;
    124) echo "ddp_link.sh: timed out after $TIMEOUT" >&2 ;;
    *) echo "ddp_link.sh: entrograd-netns exited $status (log: $OUT/ddp_link.log)" >&2 ;;
  esac
  exit $status
fi

"$PYTHON" - "$OUT/ddp.json" "$OUT/link_counters.json" <<'PY'
import json, sys
ddp_path, counters_path = sys.argv[1], sys.argv[2]
ddp = json.load(open(ddp_path))
counters = json.load(open(counters_path))
hosts = counters["hosts"]
tx = sum(h["tx_bytes"] for h in hosts)
rx = sum(h["rx_bytes"] for h in hosts)
steps, workers = ddp["steps"], ddp["workers"]
ddp.update({
    "link": counters["link"],
    "rate_bits_per_second": counters["rate_bits_per_second"],
    "link_hosts": hosts,
    "wire_tx_bytes_total": tx,
    "wire_rx_bytes_total": rx,
    "wire_tx_bytes_per_step_per_rank": tx / steps / workers if steps else 0.0,
    "wire_note": "entrograd-netns host-link counters over the whole run (start-up, "
                 "parameter broadcast and final barriers included); tx summed over "
                 "hosts counts every byte on the wire once",
})
with open(ddp_path, "w") as f:
    f.write(json.dumps(ddp, indent=2) + "\n")
print(f"ddp_link: {counters['link']}: {steps} steps x {workers} ranks, "
      f"{tx} bytes sent on the host links "
      f"({ddp['wire_tx_bytes_per_step_per_rank']:.0f} per step per rank), "
      f"median step {ddp['step_seconds_median']:.4f} s; wrote {ddp_path}")
PY
