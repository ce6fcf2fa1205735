#!/usr/bin/env bash
# The one script a GPU session runs, from the repo root, on a machine with an
# NVIDIA GPU and driver (and PyTorch for the baseline), given the bundle that
# scripts/gpu_bundle.sh built elsewhere:
#
#   bash scripts/gpu_bundle.sh              # where it builds (no GPU needed)
#   bash bench/gpu/run_on_device.sh         # on the GPU machine, gpu-bundle/ carried
#
# Steps, each under its own timeout so the whole run ends inside ~9 minutes
# whatever hangs: nvidia-smi; the CUDA parity tests without HugeLayerTest
# (in PARITY_SHARDS parallel gtest shards);
# HugeLayerTest (400M elements); gpu_compress_bench; torch_topk_bench.py;
# gpu_report.py. A failing step does not stop the later ones; the exit code
# is nonzero if any failed. Writes at most 8 flat files into $OUT (default
# out/gpu): nvidia_smi.txt, parity_test.log, parity_test.xml,
# parity_huge.log, gpu_compress_bench.jsonl, torch_topk.jsonl,
# gpu_report.md, run_log.txt. Timeouts can be changed through the
# environment (PARITY_TIMEOUT=... etc.).
set -uo pipefail
cd "$(dirname "$0")/../.."

OUT="${OUT:-out/gpu}"
mkdir -p "$OUT"
BUNDLE=gpu-bundle
LOG="$OUT/run_log.txt"
: >"$LOG"
PY=python3
[[ -x /opt/torch/.venv/bin/python3 ]] && PY=/opt/torch/.venv/bin/python3

SMI_TIMEOUT="${SMI_TIMEOUT:-15}"
PARITY_TIMEOUT="${PARITY_TIMEOUT:-180}"
HUGE_TIMEOUT="${HUGE_TIMEOUT:-90}"
BENCH_TIMEOUT="${BENCH_TIMEOUT:-90}"
TORCH_TIMEOUT="${TORCH_TIMEOUT:-90}"
REPORT_TIMEOUT="${REPORT_TIMEOUT:-15}"

log() { echo "$*" | tee -a "$LOG"; }
failed=()
# step NAME TIMEOUT_S COMMAND...: runs the command under `timeout`, notes
# its exit code and duration (124/137: it ran out of time).
step() {
  local name="$1" limit="$2"
  shift 2
  log "=== $name (timeout ${limit}s): $*"
  local start=$SECONDS
  timeout --signal=TERM --kill-after=5 "$limit" "$@"
  local rc=$?
  log "=== $name: exit $rc after $((SECONDS - start))s"
  ((rc == 0)) || failed+=("$name(rc=$rc)")
  return 0
}

if [[ ! -x "$BUNDLE/run" ]]; then
  log "run_on_device: no $BUNDLE/ here; build it with scripts/gpu_bundle.sh and carry it"
  exit 2
fi
log "host: $(uname -srm), $(nproc) cores, python $($PY --version 2>&1)"
cat "$BUNDLE/MANIFEST" >>"$LOG"
# A bundle built on another image may miss a library here: say which.
LD_LIBRARY_PATH="$PWD/$BUNDLE/lib" ldd "$BUNDLE"/bin/* | grep 'not found' | tee -a "$LOG"

step nvidia-smi "$SMI_TIMEOUT" bash -c "nvidia-smi >'$OUT/nvidia_smi.txt' 2>&1"
head -20 "$OUT/nvidia_smi.txt" 2>/dev/null

# The CPU reference dominates the parity tests' time: PARITY_SHARDS gtest
# shards run side by side (one GPU, several contexts), their logs joined.
PARITY_SHARDS="${PARITY_SHARDS:-6}"
parity_shards() {
  local pids=() shard rc=0
  for ((shard = 0; shard < PARITY_SHARDS; ++shard)); do
    GTEST_TOTAL_SHARDS=$PARITY_SHARDS GTEST_SHARD_INDEX=$shard \
      timeout --kill-after=5 "$PARITY_TIMEOUT" \
      "$BUNDLE/run" cuda_device_compressor_test --gtest_brief=1 \
      --gtest_filter='-HugeLayerTest.*' \
      --gtest_output="xml:/tmp/parity_shard_$shard.xml" \
      >"/tmp/parity_shard_$shard.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  for ((shard = 0; shard < PARITY_SHARDS; ++shard)); do
    echo "--- shard $shard"
    cat "/tmp/parity_shard_$shard.log"
  done >"$OUT/parity_test.log"
  # One xml: the shards' testsuite elements under one root.
  { echo '<?xml version="1.0" encoding="UTF-8"?>'; echo '<testsuites>'
    grep -hv -e '^<?xml' -e '<testsuites' -e '</testsuites>' /tmp/parity_shard_*.xml
    echo '</testsuites>'; } >"$OUT/parity_test.xml" 2>/dev/null
  return $rc
}
# Each shard has its own timeout (a function cannot run under `timeout`).
export -f parity_shards
export BUNDLE OUT PARITY_SHARDS PARITY_TIMEOUT
step parity "$((PARITY_TIMEOUT + 20))" bash -c parity_shards
tail -n 30 "$OUT/parity_test.log" | tee -a "$LOG"

step parity-huge "$HUGE_TIMEOUT" bash -c "'$BUNDLE/run' cuda_device_compressor_test \
  --gtest_filter='HugeLayerTest.*' >'$OUT/parity_huge.log' 2>&1"
tail -n 15 "$OUT/parity_huge.log" | tee -a "$LOG"

step compress-bench "$BENCH_TIMEOUT" bash -o pipefail -c "'$BUNDLE/run' gpu_compress_bench \
  --json-out='$OUT/gpu_compress_bench.jsonl' 2>&1 | tee -a '$LOG'"

step torch-topk "$TORCH_TIMEOUT" bash -o pipefail -c "PYTHONUNBUFFERED=1 '$PY' bench/gpu/torch_topk_bench.py \
  --json-out '$OUT/torch_topk.jsonl' 2>&1 | tee -a '$LOG'"

step report "$REPORT_TIMEOUT" "$PY" bench/gpu/gpu_report.py \
  "$OUT/gpu_compress_bench.jsonl" "$OUT/torch_topk.jsonl" --out "$OUT/gpu_report.md"

# Last, as it is only insurance: memcheck and racecheck on a few small
# parity cases, where the machine's runtime lets compute-sanitizer in
# (Firecracker yes, gVisor no). Output goes to run_log.txt.
SANITIZER_TIMEOUT="${SANITIZER_TIMEOUT:-120}"
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [[ -n "$SANITIZER" ]]; then
  for tool in memcheck racecheck; do
    step "sanitizer-$tool" "$SANITIZER_TIMEOUT" bash -o pipefail -c \
      "LD_LIBRARY_PATH='$PWD/$BUNDLE/lib' '$SANITIZER' --tool $tool --error-exitcode 3 \
       '$BUNDLE/bin/cuda_device_compressor_test' --gtest_brief=1 \
       --gtest_filter='*n1000_*:*n4097_*' 2>&1 | tail -n 25 | tee -a '$LOG'"
  done
else
  log "=== sanitizer: compute-sanitizer not found; skipped"
fi

if ((${#failed[@]})); then
  log "run_on_device: FAILED steps: ${failed[*]}"
  exit 1
fi
log "run_on_device: all steps passed"
