#!/usr/bin/env bash
# deploy.helm_lint: `helm lint --strict` (warnings fail) of
# deploy/k8s/charts/entrograd with the defaults, with one shard, and with
# every optional feature on (tests/deploy/values/*.yaml); then `helm package`
# must resolve the chart's links to deploy/k8s/prometheus/rules.yaml and
# deploy/k8s/dashboards/entrograd.json, and the packaged chart must render
# the PrometheusRule and the dashboard from them; NOTES.txt (printed by
# `helm install --dry-run=client`, which needs no cluster) gives the shard
# list.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="${ENTROGRAD_TOOLS_DIR:-$ROOT/.tools}"
HELM="$TOOLS/bin/helm"
[[ -x "$HELM" ]] || { echo "FAIL: $HELM missing: run bash scripts/setup_deploy_tools.sh" >&2; exit 1; }
CHART="$ROOT/deploy/k8s/charts/entrograd"
VALUES="$ROOT/tests/deploy/values"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
export HELM_CACHE_HOME="$SCRATCH/cache" HELM_CONFIG_HOME="$SCRATCH/config" HELM_DATA_HOME="$SCRATCH/data"

passed=0 failed=0
check() {  # check NAME COMMAND...: runs it, shows its output on failure
  local name="$1"; shift
  if "$@" >"$SCRATCH/out" 2>&1; then
    passed=$((passed + 1)); echo "ok - $name"
  else
    failed=$((failed + 1)); echo "not ok - $name"; { grep -v 'found symbolic link' "$SCRATCH/out" || true; } | sed 's/^/    /'
  fi
}

check "lint --strict, defaults" "$HELM" lint --strict "$CHART"
check "lint --strict, one shard" "$HELM" lint --strict "$CHART" --set aggregator.replicas=1
check "lint --strict, every feature with TLS" "$HELM" lint --strict "$CHART" -f "$VALUES/tls-all.yaml"
check "lint --strict, every feature with the training job" "$HELM" lint --strict "$CHART" -f "$VALUES/training-all.yaml"
check "lint --strict refuses a bad value" bash -c "! '$HELM' lint --strict '$CHART' --set aggregator.replicas=-1"

check "package" "$HELM" package "$CHART" --destination "$SCRATCH/pkg"
packaged="$SCRATCH/pkg/entrograd-$(sed -n 's/^version: *//p' "$CHART/Chart.yaml").tgz"
packaged_has_files() {
  local listing
  listing="$(tar -tzf "$packaged")"
  grep -qx 'entrograd/files/rules.yaml' <<<"$listing" &&
    grep -qx 'entrograd/files/entrograd.json' <<<"$listing" &&
    tar -xzOf "$packaged" entrograd/files/rules.yaml | cmp -s - "$ROOT/deploy/k8s/prometheus/rules.yaml" &&
    tar -xzOf "$packaged" entrograd/files/entrograd.json | cmp -s - "$ROOT/deploy/k8s/dashboards/entrograd.json"
}
check "the package holds the rules and the dashboard as files" packaged_has_files
packaged_renders() {
  "$HELM" template r "$packaged" -f "$VALUES/training-all.yaml" >"$SCRATCH/packaged.yaml" &&
    grep -q 'alert: EntrogradRoundsAborted' "$SCRATCH/packaged.yaml" &&
    grep -q '"uid": "entrograd-overview"' "$SCRATCH/packaged.yaml"
}
check "the packaged chart renders the PrometheusRule and the dashboard" packaged_renders

notes_name_the_shards() {
  local shards="train-entrograd-0.train-entrograd-headless.ml.svc.cluster.local:50051"
  shards+=",train-entrograd-1.train-entrograd-headless.ml.svc.cluster.local:50051"
  shards+=",train-entrograd-2.train-entrograd-headless.ml.svc.cluster.local:50051"
  KUBECONFIG="$SCRATCH/no-kubeconfig" "$HELM" install train "$CHART" --namespace ml --dry-run=client \
    -f "$VALUES/$1" >"$SCRATCH/install.txt" &&
    sed -n '/^NOTES:/,$p' "$SCRATCH/install.txt" >"$SCRATCH/notes.txt" &&
    grep -qxF "   $shards" "$SCRATCH/notes.txt" &&
    grep -q "helm test train -n ml" "$SCRATCH/notes.txt"
}
check "install --dry-run=client: NOTES give the shard list (training job)" notes_name_the_shards training-all.yaml
check "install --dry-run=client: NOTES give the shard list (TLS)" notes_name_the_shards tls-all.yaml

echo "$passed passed, $failed failed"
((failed == 0))
