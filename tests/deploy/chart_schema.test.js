// deploy.chart_schema: values.schema.json and the chart's own checks refuse
// bad values with a message naming them, before anything reaches a cluster;
// edge values that are fine still render.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');

const { renderChart, renderChartFails } = require('./lib/tools');

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
  [['tls.enabled=true', 'tls.secretName=x', 'trainingJob.enabled=true'], 'entrograd-worker has no TLS flags'],
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
];

for (const set of ACCEPTED) {
  test(`accepts ${set.join(' ')}`, () => {
    const { objects } = renderChart({ set });
    assert.ok(objects.some((o) => o.kind === 'StatefulSet'));
  });
}
