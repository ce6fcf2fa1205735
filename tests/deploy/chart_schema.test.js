// deploy.chart_schema: values.schema.json and the chart's own checks refuse
// bad values with a message naming them, before anything reaches a cluster;
// edge values that are fine still render.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');

const fs = require('node:fs');
const path = require('node:path');

const { CHART, renderChart, renderChartFails, npmPackage } = require('./lib/tools');

// [--set assignments, text the error must contain]
const REJECTED = [
  // values.schema.json
  [['aggregator.replicas=-1'], "at '/aggregator/replicas': minimum"],
  [['aggregator.replicas=0'], "at '/aggregator/replicas': minimum"],
  [['aggregator.replicas=two'], "at '/aggregator/replicas'"],
  [['aggregator.replica=3'], "additional properties 'replica' not allowed"],
  [['trainingjob.enabled=true'], "additional properties 'trainingjob' not allowed"],
  [['aggregator.image.pullPolicy=Sometimes'], "at '/aggregator/image/pullPolicy'"],
  [['aggregator.roundTimeout=sixty'], "at '/aggregator/roundTimeout'"],
  [['aggregator.roundTimeout=60'], "at '/aggregator/roundTimeout'"],
  [['aggregator.logLevel=verbose'], "at '/aggregator/logLevel'"],
  [['aggregator.memoryQuotaBytes=100'], "at '/aggregator/memoryQuotaBytes': minimum"],
  [['aggregator.grpcPort=70000'], "at '/aggregator/grpcPort': maximum"],
  [['aggregator.extraArgs={-v}'], "at '/aggregator/extraArgs/0'"],
  [['aggregator.podSecurityContext.runAsNonRoot=false'], "at '/aggregator/podSecurityContext/runAsNonRoot'"],
  [['aggregator.securityContext.allowPrivilegeEscalation=true'], "at '/aggregator/securityContext/allowPrivilegeEscalation'"],
  [['aggregator.image.digest=latest'], "at '/aggregator/image/digest'"],
  [['trainingJob.workers=0'], "at '/trainingJob/workers': minimum"],
  [['trainingJob.jobId=Fashion_MNIST'], "at '/trainingJob/jobId'"],
  [['trainingJob.policy=random'], "at '/trainingJob/policy'"],
  [['trainingJob.rho=0'], "at '/trainingJob/rho'"],
  [['metrics.serviceMonitor.interval=often'], "at '/metrics/serviceMonitor/interval'"],
  // The chart's own checks (templates/_helpers.tpl "entrograd.validateValues").
  [['tls.enabled=true'], 'tls.enabled needs tls.secretName'],
  [['tls.clientAuth=true'], 'tls.clientAuth needs tls.enabled'],
  [['tls.enabled=true', 'tls.secretName=x', 'aggregator.healthPort=50051'], 'aggregator.healthPort must differ'],
  [['auth.enabled=true'], 'auth.enabled needs auth.existingSecret or auth.tokens'],
  [['auth.enabled=true', 'auth.tokens.other-job=t0k3n', 'trainingJob.enabled=true'], 'no token for the example Job'],
  [['trainingJob.enabled=true', 'trainingJob.workers=9', 'aggregator.maxWorldSize=8'], 'trainingJob.workers exceeds aggregator.maxWorldSize'],
];

for (const [set, expected] of REJECTED) {
  test(`rejects ${set.join(' ')}`, () => {
    const stderr = renderChartFails({ set });
    assert.notEqual(stderr, null, `helm template accepted ${set.join(' ')}`);
    assert.ok(stderr.includes(expected), `expected ${JSON.stringify(expected)} in:\n${stderr}`);
  });
}

const ACCEPTED = [
  ['aggregator.replicas=1'],
  ['aggregator.replicas=16', 'aggregator.roundTimeout=1h30m', 'aggregator.keepaliveTime=500ms'],
  ['aggregator.drainTimeoutSeconds=0', 'aggregator.terminationGraceExtraSeconds=0'],
  ['aggregator.podDisruptionBudget.maxUnavailable=50%'],
  ['trainingJob.enabled=true', 'trainingJob.ttlSecondsAfterFinished=null', 'trainingJob.workers=1'],
  ['auth.enabled=true', 'auth.existingSecret=tokens', 'trainingJob.enabled=true'],
  ['tls.enabled=true', 'tls.secretName=x', 'trainingJob.enabled=true'],
  ['tls.enabled=true', 'tls.secretName=x', 'tls.clientAuth=true', 'trainingJob.enabled=true'],
];

for (const set of ACCEPTED) {
  test(`accepts ${set.join(' ')}`, () => {
    const { objects } = renderChart({ set });
    assert.ok(objects.some((o) => o.kind === 'StatefulSet'));
  });
}

// values.yaml and values.schema.json describe the same keys, and every key
// of values.yaml carries a "# --" comment (helm-docs style) saying what it
// does; free-form maps (resources, labels, affinity, ...) are one value.
test('values.yaml: every key is in the schema, every schema key in values.yaml, every key commented', () => {
  const YAML = npmPackage('yaml');
  const doc = YAML.parseDocument(fs.readFileSync(path.join(CHART, 'values.yaml'), 'utf8'));
  const schema = JSON.parse(fs.readFileSync(path.join(CHART, 'values.schema.json'), 'utf8'));
  const problems = [];
  function walk(map, node, prefix) {
    const inValues = new Set();
    map.items.forEach((pair, index) => {
      const key = pair.key.value;
      const where = `${prefix}${key}`;
      inValues.add(key);
      const child = node.properties && node.properties[key];
      if (!child) {
        problems.push(`${where}: not in values.schema.json`);
        return;
      }
      const comment = pair.key.commentBefore || (index === 0 && map.commentBefore) || '';
      const nested = YAML.isMap(pair.value) && child.properties && child.additionalProperties === false && key !== 'resources';
      if (nested) walk(pair.value, child, `${where}.`);
      else if (!/(^|\n)\s*-- \S/.test(comment)) problems.push(`${where}: no "# --" comment`);
    });
    for (const key of Object.keys(node.properties || {})) {
      if (!inValues.has(key)) problems.push(`${prefix}${key}: in the schema, not in values.yaml`);
    }
  }
  walk(doc.contents, schema, '');
  assert.deepEqual(problems, []);
});
