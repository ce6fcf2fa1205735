// The metric names and label values a PromQL expression refers to, and a
// check of them against what the C++ code exports (lib/sources.js), so that
// a renamed metric or label value fails the rules and dashboard tests.
// Syntax itself is promtool's job; this only needs to find the names in an
// expression promtool accepts.
'use strict';

const { exportedMetrics, aggregatorLabelValues } = require('./sources');

const KEYWORDS = new Set([
  'and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring',
  'group_left', 'group_right', 'atan2', 'inf', 'Inf', 'nan', 'NaN',
]);

// Metric names (selectors without a function call after them) in `expr`.
function referencedMetrics(expr) {
  let text = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""'); // strings
  text = text.replace(/\{[^}]*\}/g, ' '); // label matchers
  text = text.replace(/\[[^\]]*\]/g, ' '); // ranges and subqueries
  text = text.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  text = text.replace(/\boffset\s+-?[0-9][0-9a-z]*/g, ' ');
  const names = new Set();
  for (const match of text.matchAll(/(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = text.slice(match.index + match[0].length).trimStart();
    if (after.startsWith('(')) continue; // a function or aggregation
    if (KEYWORDS.has(match[0])) continue;
    names.add(match[0]);
  }
  return names;
}

// Values matched for `label` ("outcome", "reason") in `expr`, from
// label="v" and label=~"a|b" matchers.
function referencedLabelValues(expr, label) {
  const values = new Set();
  const pattern = new RegExp(`\\b${label}\\s*(=~|=|!=|!~)\\s*"([^"]*)"`, 'g');
  for (const match of expr.matchAll(pattern)) {
    for (const value of match[2].split('|')) if (/^[a-z_]+$/.test(value)) values.add(value);
  }
  return values;
}

// Problems (strings) with the names in `exprs` ([{where, expr}]): a metric
// the C++ code does not export, a histogram suffix on a non-histogram, a
// recording rule not in `recorded`, an outcome/reason value the aggregator
// never sets. Empty when all is well.
function checkExpressions(exprs, recorded = new Set()) {
  const { names, histograms } = exportedMetrics();
  const labelValues = aggregatorLabelValues();
  const problems = [];
  for (const { where, expr } of exprs) {
    for (const name of referencedMetrics(expr)) {
      if (name.includes(':')) {
        if (!recorded.has(name)) problems.push(`${where}: ${name} is not a recording rule of rules.yaml`);
        continue;
      }
      const suffix = /^(.*)_(bucket|sum|count)$/.exec(name);
      if (suffix && histograms.has(suffix[1])) continue;
      if (histograms.has(name)) {
        problems.push(`${where}: ${name} is a histogram: use ${name}_bucket, _sum or _count`);
      } else if (!names.has(name)) {
        problems.push(`${where}: metric ${name} is not exported by the C++ code`);
      }
    }
    for (const label of ['outcome', 'reason']) {
      for (const value of referencedLabelValues(expr, label)) {
        if (!labelValues.has(value)) problems.push(`${where}: ${label}="${value}" is never set by the aggregator`);
      }
    }
  }
  return problems;
}

module.exports = { referencedMetrics, referencedLabelValues, checkExpressions };
