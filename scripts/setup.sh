#!/usr/bin/env bash
# Installs every Debian package entrograd needs to build, test and run.
# Idempotent and quiet: safe to run on every CI run and on a fresh Debian 12
# machine as root. Packages already installed are not touched again.
# ENTROGRAD_SETUP_PROMETHEUS=0 skips the Prometheus server (promtool);
# ENTROGRAD_SETUP_SANITIZERS=0 skips clang and libFuzzer;
# ENTROGRAD_SETUP_PYTHON=0 skips the Python package's build dependencies;
# ENTROGRAD_SETUP_DEPLOY_TOOLS=0 skips helm, kubectl and the npm tools of the
# deploy tests (scripts/setup_deploy_tools.sh, into .tools/).
# deploy/docker/Dockerfile sets all four to 0.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libtorch-dev zlib1g-dev
  prometheus-cpp-dev
  nlohmann-json3-dev  # the one JSON library (events, summaries, reports)
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  python3-grpcio python3-grpc-tools python3-numpy
  openssl  # test certificates for the TLS tests
  iproute2  # ip and tc: link emulation (entrograd-netns, --link)
)
# clang's sanitizer runtimes and libFuzzer: scripts/test_sanitizers.sh and
# scripts/test_fuzz.sh (ENTROGRAD_SETUP_SANITIZERS=0 skips them).
if [[ "${ENTROGRAD_SETUP_SANITIZERS:-1}" == 1 ]]; then
  PACKAGES+=(clang libclang-rt-14-dev libfuzzer-14-dev)
fi
# The Python package (python/, ENTROGRAD_PYTHON): Debian's python3-torch is
# the same LibTorch 1.13.1 libtorch-dev links, so tensors cross without
# copies; pybind11 and Python headers build entrograd._C; pytest runs
# tests/python (ENTROGRAD_SETUP_PYTHON=0 skips them: the images).
if [[ "${ENTROGRAD_SETUP_PYTHON:-1}" == 1 ]]; then
  # pip, venv, setuptools and wheel: `pip install --no-build-isolation
  # --no-deps .` (pyproject.toml, setup.py), offline.
  PACKAGES+=(python3-torch python3-dev pybind11-dev python3-pytest
             python3-pip python3-venv python3-setuptools python3-wheel)
fi
if [[ "${ENTROGRAD_SETUP_PROMETHEUS:-1}" == 1 ]]; then
  PACKAGES+=(prometheus)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present"

# helm, kubectl and the npm tools of the deploy/k8s tests, into .tools/.
if [[ "${ENTROGRAD_SETUP_DEPLOY_TOOLS:-1}" == 1 ]]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/setup_deploy_tools.sh"
fi
