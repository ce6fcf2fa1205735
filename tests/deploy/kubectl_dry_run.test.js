// deploy.kubectl_dry_run: `kubectl create --dry-run=client -f` on the
// rendered chart (defaults, and every optional feature on). kubectl maps
// each object's apiVersion/kind through API discovery even in client dry-run,
// so it talks to lib/fake_discovery.js on 127.0.0.1, which serves the
// discovery documents of a 1.33 cluster with the prometheus-operator CRDs and
// nothing else (no cluster, no OpenAPI: hence --validate=false; the schemas
// are checked by deploy.chart_render). kubectl must accept every object and
// print each one back; two broken inputs show that it would not.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { SCRATCH, renderChart, runAsync, npmPackage } = require('./lib/tools');
const { startFakeDiscovery } = require('./lib/fake_discovery');

let server;
let kubeconfig;
test.before(async () => {
  server = await startFakeDiscovery();
  kubeconfig = path.join(SCRATCH, 'kubeconfig');
  fs.writeFileSync(kubeconfig, [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: fake, cluster: {server: "${server.url}"}}]`,
    'contexts: [{name: fake, context: {cluster: fake, namespace: ml}}]',
    'current-context: fake',
    'users: [{name: nobody, user: {}}]',
    '',
  ].join('\n'));
});
test.after(async () => server.close());

let fileCounter = 0;
function dryRun(text) {
  const file = path.join(SCRATCH, `manifest-${fileCounter++}.yaml`);
  fs.writeFileSync(file, text);
  return runAsync('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', path.join(SCRATCH, 'kube-cache'),
    'create', '--dry-run=client', '--validate=false', '-f', file, '-o', 'yaml']);
}

function objectsOf(text) {
  const YAML = npmPackage('yaml');
  const parsed = YAML.parseAllDocuments(text).map((d) => d.toJS()).filter((o) => o !== null);
  // kubectl prints several objects as one v1 List.
  return parsed.flatMap((o) => (o.kind === 'List' ? o.items : [o]));
}

const identity = (o) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace || ''}/${o.metadata.name}`;

for (const [name, options] of Object.entries({
  defaults: {},
  'every feature with TLS': { values: ['tls-all.yaml'] },
  'every feature with the training job': { values: ['training-all.yaml'] },
})) {
  test(`${name}: kubectl create --dry-run=client accepts every rendered object`, async () => {
    const { text, objects } = renderChart({ namespace: 'ml', ...options });
    const result = await dryRun(text);
    assert.equal(result.status, 0, `kubectl failed:\n${result.stderr}`);
    const printed = objectsOf(result.stdout);
    assert.deepEqual(printed.map(identity), objects.map(identity));
  });
}

test('kubectl refuses an API version a 1.33 cluster no longer serves', async () => {
  const result = await dryRun('apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: old\nspec:\n  maxUnavailable: 1\n');
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /no matches for kind "PodDisruptionBudget" in version "policy\/v1beta1"/);
});

test('kubectl refuses an object whose metadata does not decode', async () => {
  const result = await dryRun('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yes\ndata: {}\n');
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /cannot unmarshal bool into Go struct field ObjectMeta\.metadata\.name/);
});
