#!/usr/bin/env bash
# Builds the CUDA parity test and gpu_compress_bench and packs them into
# gpu-bundle/ (repo root, git-ignored) with every shared library they need
# except glibc, libstdc++, libgcc and the NVIDIA driver's own libcuda: what a
# GPU session carries to a machine that has only the driver (the device
# tool's carry=["gpu-bundle"]), where bench/gpu/run_on_device.sh runs it.
#
#   bash scripts/gpu_bundle.sh    # ENTROGRAD_BUILD_DIR picks the build dir
#
# The CUDA runtime and GoogleTest are linked statically; what is left
# (Debian's libabsl_*.so) goes to gpu-bundle/lib, and gpu-bundle/run puts
# that folder on LD_LIBRARY_PATH before it starts a binary:
#
#   gpu-bundle/run cuda_device_compressor_test --gtest_brief=1
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${ENTROGRAD_BUILD_DIR:-build}"
BUNDLE=gpu-bundle
MAX_MIB=60
# target name -> path in the build dir
declare -A BINARIES=(
  [cuda_device_compressor_test]=tests/client_lib/cuda/cuda_device_compressor_test
  [gpu_compress_bench]=bench/gpu/gpu_compress_bench
)
# Shared libraries every Linux machine with the NVIDIA driver has, and that
# must match that machine (the driver's libcuda above all): never bundled.
SYSTEM_LIBS='^(ld-linux.*|linux-vdso.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libnvidia-.*)\.so'

ENTROGRAD_BUILD_DIR="$BUILD_DIR" bash scripts/build.sh "${!BINARIES[@]}"

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
for name in "${!BINARIES[@]}"; do
  # Debug info is most of a RelWithDebInfo binary and is not needed there.
  strip --strip-debug -o "$BUNDLE/bin/$name" "$BUILD_DIR/${BINARIES[$name]}"
done

# Every library ldd resolves, minus the system's; copied as plain files
# under their soname (the name the binaries ask for).
ldd "$BUNDLE"/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r soname path; do
    if [[ "$soname" =~ $SYSTEM_LIBS ]]; then continue; fi
    cp -L "$path" "$BUNDLE/lib/$soname"
  done
if ldd "$BUNDLE"/bin/* | grep -q 'not found'; then
  ldd "$BUNDLE"/bin/* | grep 'not found' >&2
  echo "gpu_bundle: unresolved libraries (above)" >&2
  exit 1
fi
if ldd "$BUNDLE"/bin/* | grep -q 'libcudart\.so'; then
  echo "gpu_bundle: a binary links the shared CUDA runtime; it must be static" >&2
  exit 1
fi

cat >"$BUNDLE/run" <<'EOF'
#!/bin/sh
# gpu-bundle/run NAME [ARGS...]: runs bin/NAME with the bundled libraries.
# No external commands, so it works under `env -i` (no PATH).
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
here="$(cd "$here" && pwd)"
name="$1"
shift
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$here/bin/$name" "$@"
EOF
chmod +x "$BUNDLE/run"

# What was built, and the newest glibc / libstdc++ symbol versions the
# binaries need: the first thing to compare if they fail to start there.
glibc_needed() {
  objdump -T "$BUNDLE"/bin/* "$BUNDLE"/lib/* 2>/dev/null |
    grep -o "$1_[0-9.]*" | sort -uV | tail -1
}
{
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!gpu-bundle' || echo ' (with local changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "cuda: $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo unknown)"
  echo "needs: $(glibc_needed GLIBC), $(glibc_needed GLIBCXX), NVIDIA driver for that CUDA release or newer"
  echo "binaries: ${!BINARIES[*]}"
  echo "libraries: $(ls "$BUNDLE/lib" | wc -l) in lib/"
} >"$BUNDLE/MANIFEST"
cat "$BUNDLE/MANIFEST"

# The bundle must start where nothing is set: check here with an empty
# environment (the tests skip without a GPU, naming the reason).
echo "--- env -i $BUNDLE/run cuda_device_compressor_test (first lines):"
env -i "./$BUNDLE/run" cuda_device_compressor_test --gtest_brief=1 \
  --gtest_filter='DeviceCreateTest.*' 2>&1 | head -6 || true

size_kib=$(du -sk "$BUNDLE" | cut -f1)
echo "gpu_bundle: $BUNDLE is $((size_kib / 1024)) MiB ($size_kib KiB), limit $MAX_MIB MiB"
if ((size_kib > MAX_MIB * 1024)); then
  echo "gpu_bundle: too large to carry to the device machine" >&2
  exit 1
fi
