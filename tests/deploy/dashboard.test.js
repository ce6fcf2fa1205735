// deploy.dashboard: deploy/k8s/dashboards/entrograd.json
//  - type-checks as a @grafana/schema Dashboard under tsc --strict (an
//    object literal: unknown or misspelled fields fail);
//  - is well formed for Grafana: unique panel ids and refIds, panels on the
//    24-column grid without overlaps, every query on the $datasource
//    variable, every $variable defined;
//  - every panel's PromQL passes `promtool check rules` (each query becomes
//    a recording rule, Grafana's $__ variables replaced by durations);
//  - every metric, histogram series and label value it reads is exported by
//    the C++ code (so renaming a metric fails here), and the panels the
//    product promises are there.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { REPO, SCRATCH, run, npmPackage } = require('./lib/tools');
const { typecheck } = require('./lib/typescript');
const { checkExpressions, referencedMetrics } = require('./lib/promql');

const DASHBOARD = path.join(REPO, 'deploy', 'k8s', 'dashboards', 'entrograd.json');
const RULES = path.join(REPO, 'deploy', 'k8s', 'prometheus', 'rules.yaml');
const text = fs.readFileSync(DASHBOARD, 'utf8');
const dashboard = JSON.parse(text);
const rows = dashboard.panels.filter((p) => p.type === 'row');
const panels = dashboard.panels.filter((p) => p.type !== 'row');
const variables = dashboard.templating.list;
const variableNames = new Set(variables.map((v) => v.name));
const BUILTINS = { __rate_interval: '5m', __interval: '1m', __range: '1h' };

const queries = panels.flatMap((panel) => panel.targets.map((target) => ({
  where: `panel ${panel.id} "${panel.title}" ${target.refId}`, panel, target, expr: target.expr,
})));

// Replaces Grafana variables the way Grafana would before sending the query:
// $__rate_interval etc. by a duration, template variables by ".*" (their
// "All" value; they only appear inside label matchers).
function substitute(expr) {
  return expr.replace(/\$\{?(\w+)\}?/g, (whole, name) => {
    if (name in BUILTINS) return BUILTINS[name];
    if (variableNames.has(name)) return '.*';
    throw new Error(`unknown variable ${whole} in ${expr}`);
  });
}

test('type-checks as a @grafana/schema Dashboard (tsc --strict)', () => {
  const source = [
    "import type { Dashboard } from '@grafana/schema';",
    `export const dashboard = ${text.trim()} satisfies Dashboard;`,
    '',
  ].join('\n');
  assert.equal(typecheck('dashboard.ts', source), '');
});

test('the type check catches a misspelled field', () => {
  const broken = JSON.parse(text);
  broken.panels[1].gridpos = broken.panels[1].gridPos;
  const source = `import type { Dashboard } from '@grafana/schema';\nexport const d = ${JSON.stringify(broken)} satisfies Dashboard;\n`;
  assert.match(typecheck('broken.ts', source), /'"gridpos"' does not exist/);
});

test('unique panel ids and refIds; panels on the grid without overlaps', () => {
  const ids = dashboard.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  const cells = new Map();
  for (const panel of dashboard.panels) {
    const { x, y, w, h } = panel.gridPos;
    assert.ok(x >= 0 && w >= 1 && x + w <= 24, `panel ${panel.id} fits the 24 columns`);
    for (let row = y; row < y + h; row++) {
      for (let column = x; column < x + w; column++) {
        const key = `${row},${column}`;
        assert.ok(!cells.has(key), `panels ${cells.get(key)} and ${panel.id} overlap at ${key}`);
        cells.set(key, panel.id);
      }
    }
  }
  for (const panel of panels) {
    const refIds = panel.targets.map((t) => t.refId);
    assert.ok(refIds.length > 0, `panel ${panel.id} has queries`);
    assert.equal(new Set(refIds).size, refIds.length, `panel ${panel.id} refIds are unique`);
    assert.ok(panel.title && panel.description, `panel ${panel.id} has a title and a description`);
  }
  assert.ok(rows.length >= 3);
});

test('every query uses the $datasource variable and only defined variables', () => {
  const datasource = variables.find((v) => v.name === 'datasource');
  assert.equal(datasource.type, 'datasource');
  assert.equal(datasource.query, 'prometheus');
  for (const { where, panel, target, expr } of queries) {
    for (const ref of [panel.datasource, target.datasource]) {
      assert.deepEqual(ref, { type: 'prometheus', uid: '${datasource}' }, where);
    }
    substitute(expr); // throws on an undefined variable
  }
  for (const variable of variables.filter((v) => v.type === 'query')) {
    assert.deepEqual(variable.datasource, { type: 'prometheus', uid: '${datasource}' }, variable.name);
  }
});

test('every panel query passes promtool check rules', () => {
  const groups = [{
    name: 'dashboard',
    rules: queries.map(({ panel, target, expr }) => ({
      record: `dashboard:panel_${panel.id}:${target.refId}`,
      expr: substitute(expr),
    })),
  }];
  const file = path.join(SCRATCH, 'dashboard-queries.yaml');
  fs.writeFileSync(file, npmPackage('yaml').stringify({ groups }));
  const result = run('promtool', ['check', 'rules', file]);
  assert.equal(result.status, 0, result.stdout + result.stderr);
  assert.match(result.stdout, new RegExp(`SUCCESS: ${queries.length} rules found`));
});

test('queries and variables read only metrics and label values the C++ code exports', () => {
  const recorded = new Set(npmPackage('yaml').parse(fs.readFileSync(RULES, 'utf8'))
    .groups.flatMap((g) => g.rules).filter((r) => r.record).map((r) => r.record));
  const exprs = queries.map(({ where, expr }) => ({ where, expr: substitute(expr) }));
  for (const variable of variables.filter((v) => v.type === 'query')) {
    const match = /^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*\w+\s*\)$/.exec(variable.query.query);
    assert.ok(match, `variable ${variable.name}: label_values(metric, label)`);
    exprs.push({ where: `variable ${variable.name}`, expr: match[1] });
  }
  assert.deepEqual(checkExpressions(exprs, recorded), []);
});

test('the panels the product promises are there', () => {
  const used = new Set(queries.flatMap(({ expr }) => [...referencedMetrics(substitute(expr))]));
  const promised = {
    'compression ratio and bytes saved (uplink)': ['entrograd_uplink_wire_bytes_total', 'entrograd_uplink_dense_bytes_total'],
    'compression ratio and bytes saved (downlink)': ['entrograd_downlink_wire_bytes_total', 'entrograd_downlink_dense_bytes_total'],
    'rounds by outcome': ['entrograd_rounds_total'],
    'round latency quantiles': ['entrograd_round_duration_seconds_bucket'],
    'merge latency quantiles': ['entrograd_merge_duration_seconds_bucket'],
    'active streams': ['entrograd_active_streams'],
    'rejects by reason': ['entrograd_rejects_total'],
    'client compress time': ['entrograd_client_compress_duration_seconds_bucket'],
    'per-layer entropy and keep ratio': ['entrograd_client_layer_entropy_nats', 'entrograd_client_layer_keep_ratio'],
  };
  for (const [what, metrics] of Object.entries(promised)) {
    for (const metric of metrics) assert.ok(used.has(metric), `${what}: no panel reads ${metric}`);
  }
  const byOutcome = queries.find(({ expr }) => expr.includes('entrograd_rounds_total'));
  assert.match(byOutcome.expr, /by \(outcome\)/);
  const byReason = queries.find(({ expr }) => expr.includes('entrograd_rejects_total'));
  assert.match(byReason.expr, /by \(reason\)/);
  const ratio = queries.filter(({ panel }) => /compression ratio/i.test(panel.title));
  assert.ok(ratio.every(({ expr }) => /dense_bytes_total.*\/.*wire_bytes_total/.test(expr)), 'ratio = dense / wire');
  for (const { panel, expr } of queries.filter(({ expr }) => expr.includes('histogram_quantile'))) {
    assert.match(expr, /by \(le\)/, `panel ${panel.id}: quantiles aggregate by le`);
    assert.equal(panel.fieldConfig.defaults.unit, 's', `panel ${panel.id}: seconds`);
  }
});
