// deploy.prometheus_rules: deploy/k8s/prometheus/rules.yaml passes
// `promtool check rules`, its unit tests (tests/deploy/prometheus/
// rules_test.yaml: alerts firing and resolving, recording rule values) pass
// `promtool test rules`, and every expression reads only metrics, histogram
// series and label values the C++ code exports.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { REPO, SCRATCH, run, npmPackage } = require('./lib/tools');
const { checkExpressions } = require('./lib/promql');

const RULES = path.join(REPO, 'deploy', 'k8s', 'prometheus', 'rules.yaml');
const RULES_TEST = path.join(REPO, 'tests', 'deploy', 'prometheus', 'rules_test.yaml');
const rules = npmPackage('yaml').parse(fs.readFileSync(RULES, 'utf8'));
const allRules = rules.groups.flatMap((group) => group.rules);

test('promtool check rules', () => {
  const result = run('promtool', ['check', 'rules', RULES]);
  assert.equal(result.status, 0, result.stdout + result.stderr);
  assert.match(result.stdout, new RegExp(`SUCCESS: ${allRules.length} rules found`));
});

test('promtool test rules (alert and recording rule unit tests)', () => {
  const result = run('promtool', ['test', 'rules', RULES_TEST]);
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test('every alert has a known severity, a summary and a description', () => {
  const alerts = allRules.filter((r) => r.alert);
  assert.ok(alerts.length >= 6);
  for (const rule of alerts) {
    assert.ok(['info', 'warning', 'critical'].includes(rule.labels.severity), `${rule.alert} severity`);
    assert.ok(rule.annotations.summary && rule.annotations.description, `${rule.alert} annotations`);
  }
  for (const name of ['EntrogradRoundsAborted', 'EntrogradRoundsRejected', 'EntrogradRejects',
    'EntrogradCompressionRatioLow', 'EntrogradCompressionRatioFalling']) {
    assert.ok(alerts.some((r) => r.alert === name), `alert ${name}`);
  }
});

test('expressions read only metrics and label values the C++ code exports', () => {
  const recorded = new Set();
  const exprs = [];
  for (const rule of allRules) {
    exprs.push({ where: rule.record || rule.alert, expr: rule.expr });
    // A recording rule may only be used after it is defined.
    if (rule.record) recorded.add(rule.record);
  }
  assert.deepEqual(checkExpressions(exprs, recorded), []);
});

test('the name check catches a renamed metric, a bad histogram series and a bad label value', () => {
  const renamed = fs.readFileSync(RULES, 'utf8')
    .replace('entrograd_rounds_total{outcome="aborted"}[10m]', 'entrograd_round_total{outcome="aborted"}[10m]')
    .replace('entrograd_round_duration_seconds_bucket[5m]', 'entrograd_round_duration_seconds[5m]')
    .replace('entrograd_rounds_total{outcome="rejected"}', 'entrograd_rounds_total{outcome="refused"}');
  const file = path.join(SCRATCH, 'renamed-rules.yaml');
  fs.writeFileSync(file, renamed);
  // Still valid PromQL: only the name check can tell.
  assert.equal(run('promtool', ['check', 'rules', file]).status, 0);
  const exprs = npmPackage('yaml').parse(renamed).groups.flatMap((g) => g.rules)
    .map((r) => ({ where: r.record || r.alert, expr: r.expr }));
  const problems = checkExpressions(exprs, new Set(allRules.filter((r) => r.record).map((r) => r.record)));
  assert.deepEqual(problems, [
    'entrograd:round_duration_seconds:p50_5m: entrograd_round_duration_seconds is a histogram: use entrograd_round_duration_seconds_bucket, _sum or _count',
    'EntrogradRoundsAborted: metric entrograd_round_total is not exported by the C++ code',
    'EntrogradRoundsRejected: outcome="refused" is never set by the aggregator',
  ]);
});
