#!/usr/bin/env bash
# The installed package works outside the tree: `cmake --install` this build
# into a temporary prefix, configure and build examples/cpp_training_job
# against it with find_package(entrograd), then train two ranks of it
# against the installed entrograd-aggregator. Both ranks must finish every
# step and end on the same parameter hash. Everything lives in a temporary
# directory, removed on exit, and the aggregator is stopped.
#
# Usage: install_package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir="$1" source_dir="$2"
work=$(mktemp -d)
aggregator_pid=""
cleanup() {
  [[ -n "$aggregator_pid" ]] && kill "$aggregator_pid" 2>/dev/null && wait "$aggregator_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

prefix="$work/prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"; echo "FAIL: cmake --install" >&2; exit 1; }
for file in lib/cmake/entrograd/entrogradConfig.cmake lib/cmake/entrograd/entrogradConfigVersion.cmake \
            include/entrograd/client.h include/entrograd/codec.h include/entrograd/wire/payload_proto.h \
            include/entrograd/v1/aggregator.pb.h bin/entrograd-aggregator; do
  [[ -e "$prefix/$file" ]] || { echo "FAIL: the install has no $file" >&2; exit 1; }
done
# Private headers stay private.
if find "$prefix/include" -path '*transport/*' -o -path '*core/*' | grep -q .; then
  echo "FAIL: private headers were installed:" >&2
  find "$prefix/include" -path '*transport/*' -o -path '*core/*' >&2
  exit 1
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$source_dir/examples/cpp_training_job" -B "$work/job" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; echo "FAIL: configuring the example" >&2; exit 1; }
cmake --build "$work/job" >"$work/build.log" 2>&1 || {
  cat "$work/build.log"; echo "FAIL: building the example against the package" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port=$(free_port)
"$prefix/bin/entrograd-aggregator" --listen="127.0.0.1:$port" \
  --metrics_listen="127.0.0.1:$(free_port)" --round_timeout=60s >"$work/aggregator.log" 2>&1 &
aggregator_pid=$!

steps=20
for rank in 0 1; do
  timeout 240 "$work/job/example_job" "127.0.0.1:$port" install-test "$rank" 2 "$steps" \
    >"$work/rank$rank.out" 2>"$work/rank$rank.err" &
done
status=0
wait -n || status=$?
wait -n || status=$?
for rank in 0 1; do
  if ((status != 0)) || ! grep -q "^params_hash" "$work/rank$rank.out"; then
    echo "FAIL: rank $rank did not finish (exit $status)" >&2
    tail -n 5 "$work/rank$rank.err" "$work/rank$rank.out" "$work/aggregator.log" >&2
    exit 1
  fi
  if [[ $(grep -c "^rank $rank step" "$work/rank$rank.out") != "$steps" ]]; then
    echo "FAIL: rank $rank did not report $steps steps" >&2; exit 1
  fi
done
hash0=$(grep "^params_hash" "$work/rank0.out") hash1=$(grep "^params_hash" "$work/rank1.out")
if [[ "$hash0" != "$hash1" ]]; then
  echo "FAIL: the replicas differ: rank 0 $hash0, rank 1 $hash1" >&2; exit 1
fi
first=$(grep "^rank 0 step 0 " "$work/rank0.out" | awk '{print $6}')
last=$(grep "^rank 0 step $((steps - 1)) " "$work/rank0.out" | awk '{print $6}')
echo "ok: 2 ranks of an out-of-tree job trained $steps steps against the installed package;" \
     "loss $first -> $last; $hash0 on both"
