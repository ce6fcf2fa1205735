#!/usr/bin/env bash
# Builds the concurrent and parsing parts (compression core, codec, merge,
# job registry, gRPC service, client transport, npy reader) again with
# AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer included),
# and runs their tests. Any report fails the test that caused it. No
# LibTorch, no benchmarks, no CUDA in these builds: only what the tests
# below need. Called by scripts/test.sh; also usable alone.
#
# `tsan` builds the concurrent tests (gRPC service, merge pool and rounds,
# job registry, client transport) with ThreadSanitizer; any race report
# fails the test. Debian's Abseil and gRPC are not instrumented: each test
# binary of that build links tests/sanitizers/, which teaches TSan their
# synchronisation (absl::Mutex, CondVar, Notification; gRPC's batch
# completions, a server call's OnDone, the server's Shutdown), and
# tests/tsan.supp only stops TSan checking the accesses those libraries
# make themselves (each entry says why). scripts/test.sh runs both modes.
#
# Usage: bash scripts/test_sanitizers.sh [asan|tsan]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# Line tables (-g1) are all a sanitizer report needs to name file and line;
# full debug info and -O2 cost a third more compile time for nothing here.
# ccache may ignore the directory the debug info names: a clone elsewhere hits.
SANITIZER_OPT_FLAGS="-O1 -g1 -DNDEBUG"
export CCACHE_NOHASHDIR=1

ASAN_TESTS=(
  core_entropy_test core_keep_count_test core_select_test core_layer_compressor_test
  codec_decode_errors_test codec_encode_validation_test codec_encoding_choice_test
  codec_half_float_test codec_round_trip_test codec_scatter_test codec_wire_format_test
  aggregator_merge_test aggregator_job_registry_test aggregator_token_store_test
  aggregator_reactor_sink_test aggregator_merge_rounds_test aggregator_bad_input_test
  aggregator_failures_test client_transport_test
  tools_npy_header_test tools_array_file_reader_test
)
# The concurrent parts: the gRPC service, the merge pool and rounds, the
# job registry, and the client transport.
TSAN_TESTS=(
  aggregator_reactor_sink_test aggregator_merge_rounds_test aggregator_bad_input_test
  aggregator_failures_test aggregator_merge_pool_test aggregator_exchange_session_test
  aggregator_merge_round_test aggregator_job_registry_test
  client_transport_test
)

# configure_and_build DIR SANITIZERS TARGET...
configure_and_build() {
  local dir="$1" sanitizers="$2"; shift 2
  local targets=()
  for target in "$@"; do
    # Tests that another session has not added yet are skipped, not failed.
    if grep -q "entrograd_add_test(NAME $target\b" -r tests; then targets+=("$target"); fi
  done
  if [[ ! -f "$dir/build.ninja" ]]; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_FLAGS_RELEASE="$SANITIZER_OPT_FLAGS" -DCMAKE_C_FLAGS_RELEASE="$SANITIZER_OPT_FLAGS" \
      -DENTROGRAD_SANITIZE="$sanitizers" -DENTROGRAD_WITH_TORCH=OFF \
      -DENTROGRAD_BUILD_BENCH=OFF -DENTROGRAD_CUDA=OFF >"$dir.configure.log" 2>&1 || {
      cat "$dir.configure.log"; echo "sanitizers: configure of $dir failed" >&2; exit 1; }
  fi
  ninja -C "$dir" -j"$(nproc)" "${targets[@]}"
  # ctest names are "<binary>.<Suite>.<Test>": run those of the built binaries.
  local regex
  regex="^($(IFS='|'; echo "${targets[*]}"))\\."
  (cd "$dir" && ctest --output-on-failure --timeout 900 -j"$(nproc)" -R "$regex" -LE stress)
}

# Reports name the file and line; a leak or race is a failure.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"

modes=("$@")
((${#modes[@]})) || modes=(asan tsan)
for mode in "${modes[@]}"; do
  case "$mode" in
    asan) echo "sanitizers: ASan + UBSan"; configure_and_build build-asan address,undefined "${ASAN_TESTS[@]}" ;;
    tsan) echo "sanitizers: TSan"; configure_and_build build-tsan thread "${TSAN_TESTS[@]}" ;;
    *) echo "usage: $0 [asan|tsan]..." >&2; exit 2 ;;
  esac
done
