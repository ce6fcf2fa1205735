// What the C++ sources define, read from the sources themselves so that a
// renamed flag or metric fails the deploy tests: command-line flags
// (ABSL_FLAG) and exported Prometheus metric names.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { REPO } = require('./tools');

const AGGREGATOR_FLAGS = 'aggregator/config/aggregator_flags.cc';
const WORKER_FLAGS = 'workers/fashion_mnist/worker_flags.cc';
// Every C++ file that registers metrics (families built with prometheus-cpp).
const METRIC_SOURCES = [
  'aggregator/metrics/aggregator_metrics.cc',
  'client_lib/src/metrics/client_metrics.cc',
];

function read(relative) {
  return fs.readFileSync(path.join(REPO, relative), 'utf8');
}

// Flag names defined with ABSL_FLAG(type, name, default, help) in `relative`.
function abslFlags(relative) {
  const flags = new Set();
  for (const match of read(relative).matchAll(/ABSL_FLAG\(\s*[^,]+,\s*([a-z0-9_]+)\s*,/g)) {
    flags.add(match[1]);
  }
  if (flags.size === 0) throw new Error(`no ABSL_FLAG found in ${relative}`);
  return flags;
}

// Metric families the C++ code registers: {names: Set, histograms: Set}.
// Names are the string literals passed to .Name(...) or to the small
// BuildCounter/BuildGauge helpers and to the client's counter(...) lambda:
// every "entrograd_..." literal in those files. Histograms are the names
// passed to BuildHistogram().Name(...); Prometheus exposes them as
// NAME_bucket, NAME_sum and NAME_count.
function exportedMetrics() {
  const names = new Set();
  const histograms = new Set();
  for (const relative of METRIC_SOURCES) {
    const text = read(relative);
    for (const match of text.matchAll(/"(entrograd_[a-z0-9_]+)"/g)) names.add(match[1]);
    for (const match of text.matchAll(/BuildHistogram\(\)\s*\.Name\(\s*"([a-z0-9_]+)"\s*\)/g)) {
      histograms.add(match[1]);
    }
  }
  if (names.size === 0) throw new Error(`no metric names found in ${METRIC_SOURCES.join(', ')}`);
  if (histograms.size === 0) throw new Error(`no histograms found in ${METRIC_SOURCES.join(', ')}`);
  return { names, histograms };
}

// Label values the aggregator gives `outcome` and `reason`: the string
// literals returned by RoundOutcomeLabel / RejectReasonLabel.
function aggregatorLabelValues() {
  const text = read('aggregator/metrics/aggregator_metrics.cc');
  const values = new Set();
  for (const match of text.matchAll(/return "([a-z_]+)";/g)) values.add(match[1]);
  return values;
}

// The service name the aggregator reports in grpc.health.v1 (SERVING, and
// NOT_SERVING while draining): kServiceName in aggregator_server.cc.
function healthServiceName() {
  const match = /kServiceName\[\]\s*=\s*"([^"]+)"/.exec(read('aggregator/server/aggregator_server.cc'));
  if (!match) throw new Error('kServiceName not found in aggregator/server/aggregator_server.cc');
  return match[1];
}

module.exports = {
  AGGREGATOR_FLAGS, WORKER_FLAGS, METRIC_SOURCES,
  abslFlags, exportedMetrics, aggregatorLabelValues, healthServiceName,
};
