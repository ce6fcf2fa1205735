// deploy.chart_render: `helm template` of deploy/k8s/charts/entrograd with
// the defaults, with every optional feature on (tests/deploy/values/*.yaml)
// and with S = 1 and S = 3 shards. Every rendered object must validate
// against kubernetes-models and type-check against its TypeScript interface
// (no unknown fields); then the content that matters is asserted: the
// workers' shard list, probes, drain, non-root, flags that exist in the C++
// sources, and wiring between objects (selectors, ports, secrets, rules).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { REPO, renderChart, findObject, npmPackage } = require('./lib/tools');
const { validateObjects, typecheckObjects } = require('./lib/kube');
const { AGGREGATOR_FLAGS, WORKER_FLAGS, abslFlags, healthServiceName } = require('./lib/sources');

const NAMESPACE = 'ml';
// What the probes must ask grpc.health.v1 about (aggregator_server.cc).
const HEALTH_SERVICE = healthServiceName();
const SCENARIOS = {
  defaults: { values: [] },
  'one shard': { set: ['aggregator.replicas=1'] },
  'three shards with the training job': { set: ['aggregator.replicas=3', 'trainingJob.enabled=true'] },
  'every feature with TLS': { values: ['tls-all.yaml'] },
  'every feature with the training job': { values: ['training-all.yaml'] },
  'the training job with server-only TLS': {
    set: ['tls.enabled=true', 'tls.secretName=entrograd-tls', 'trainingJob.enabled=true'],
  },
};
const rendered = {};
for (const [name, options] of Object.entries(SCENARIOS)) {
  rendered[name] = renderChart({ namespace: NAMESPACE, ...options }).objects;
}

// "--name=value" / "--name" -> [name, value|undefined].
function parseFlag(arg) {
  const match = /^--([a-z0-9_]+)(?:=(.*))?$/s.exec(arg);
  assert.ok(match, `argument ${JSON.stringify(arg)} is not --name[=value]`);
  return [match[1], match[2]];
}
function flagMap(args) {
  return new Map(args.map(parseFlag));
}
function podSpecsOf(objects) {
  const specs = [];
  for (const object of objects) {
    if (object.kind === 'Pod') specs.push([object, object.spec]);
    if (object.kind === 'StatefulSet' || object.kind === 'Job') specs.push([object, object.spec.template.spec]);
  }
  return specs;
}
function matches(selector, labels) {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}
function aggregatorContainer(objects) {
  const sts = findObject(objects, 'StatefulSet');
  return sts.spec.template.spec.containers.find((c) => c.name === 'aggregator');
}
// The shard addresses the workers must use, computed here from the rendered
// StatefulSet and headless Service (not from the chart's helper).
function expectedShards(objects) {
  const sts = findObject(objects, 'StatefulSet');
  const headless = findObject(objects, 'Service', (s) => s.spec.clusterIP === 'None');
  assert.equal(sts.spec.serviceName, headless.metadata.name, 'StatefulSet.serviceName is the headless Service');
  const grpcPort = aggregatorContainer(objects).ports.find((p) => p.name === 'grpc').containerPort;
  const ns = sts.metadata.namespace;
  return Array.from({ length: sts.spec.replicas },
    (_, i) => `${sts.metadata.name}-${i}.${headless.metadata.name}.${ns}.svc.cluster.local:${grpcPort}`);
}

for (const [name, objects] of Object.entries(rendered)) {
  test(`${name}: every object validates against kubernetes-models`, () => {
    validateObjects(objects);
  });

  test(`${name}: every object type-checks against its model (tsc --strict, no unknown fields)`, () => {
    assert.equal(typecheckObjects(objects, name.replace(/\W+/g, '_')), '');
  });

  test(`${name}: common labels and the release namespace`, () => {
    for (const object of objects) {
      const labels = object.metadata.labels || {};
      for (const key of ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by', 'helm.sh/chart']) {
        assert.ok(labels[key], `${object.kind}/${object.metadata.name} lacks label ${key}`);
      }
      if (!['ServiceMonitor', 'PrometheusRule', 'ConfigMap'].includes(object.kind)) {
        assert.equal(object.metadata.namespace, NAMESPACE, `${object.kind}/${object.metadata.name} namespace`);
      }
    }
  });

  test(`${name}: every pod runs as non-root, read-only, without privilege escalation`, () => {
    for (const [owner, spec] of podSpecsOf(objects)) {
      const where = `${owner.kind}/${owner.metadata.name}`;
      assert.equal(spec.securityContext.runAsNonRoot, true, `${where}: runAsNonRoot`);
      assert.ok(spec.securityContext.runAsUser > 0, `${where}: runAsUser is not root`);
      assert.equal(spec.automountServiceAccountToken, false, `${where}: no API token mounted`);
      for (const container of [...(spec.initContainers || []), ...spec.containers]) {
        const sc = container.securityContext || {};
        assert.equal(sc.allowPrivilegeEscalation, false, `${where}/${container.name}: allowPrivilegeEscalation`);
        assert.equal(sc.readOnlyRootFilesystem, true, `${where}/${container.name}: readOnlyRootFilesystem`);
        assert.deepEqual(sc.capabilities && sc.capabilities.drop, ['ALL'], `${where}/${container.name}: drops ALL capabilities`);
        assert.ok(container.resources && container.resources.requests && container.resources.requests.memory,
          `${where}/${container.name}: memory request`);
      }
    }
  });

  test(`${name}: aggregator flags exist in ${AGGREGATOR_FLAGS} and are well formed`, () => {
    const known = abslFlags(AGGREGATOR_FLAGS);
    const container = aggregatorContainer(objects);
    const flags = flagMap(container.args);
    for (const flag of flags.keys()) assert.ok(known.has(flag), `--${flag} is not an aggregator flag`);
    for (const flag of ['memory_quota_bytes', 'max_jobs', 'max_world_size', 'max_steps_ahead', 'max_message_bytes',
                        'max_layers', 'max_rounds_per_job', 'max_stream_queue_bytes', 'merge_threads']) {
      assert.match(flags.get(flag), /^[0-9]+$/, `--${flag} is a plain integer (not 1e+09)`);
    }
    for (const flag of ['round_timeout', 'keepalive_time', 'keepalive_timeout', 'drain_timeout', 'max_incarnation_lead']) {
      assert.match(flags.get(flag), /^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$/, `--${flag} is an absl duration`);
    }
    // The metrics server only takes an IPv4 literal or a bracketed IPv6 one.
    const ports = Object.fromEntries(container.ports.map((p) => [p.name, p.containerPort]));
    assert.equal(flags.get('listen'), `0.0.0.0:${ports.grpc}`);
    assert.equal(flags.get('metrics_listen'), `0.0.0.0:${ports.metrics}`);
    assert.equal(flags.get('shard_name'), '$(POD_NAME)');
    const podName = container.env.find((e) => e.name === 'POD_NAME');
    assert.equal(podName.valueFrom.fieldRef.fieldPath, 'metadata.name');
  });

  test(`${name}: terminationGracePeriodSeconds covers --drain_timeout`, () => {
    const sts = findObject(objects, 'StatefulSet');
    const drain = /^([0-9]+)s$/.exec(flagMap(aggregatorContainer(objects).args).get('drain_timeout'));
    assert.ok(drain, '--drain_timeout is whole seconds');
    const grace = sts.spec.template.spec.terminationGracePeriodSeconds;
    assert.ok(grace > Number(drain[1]), `grace ${grace}s > drain ${drain[1]}s`);
  });

  test(`${name}: services and the PodDisruptionBudget select the aggregator pods`, () => {
    const sts = findObject(objects, 'StatefulSet');
    const podLabels = sts.spec.template.metadata.labels;
    assert.ok(matches(sts.spec.selector.matchLabels, podLabels));
    const container = aggregatorContainer(objects);
    const portNames = new Set(container.ports.map((p) => p.name));
    const services = objects.filter((o) => o.kind === 'Service');
    assert.equal(services.length, 2);
    for (const service of services) {
      assert.ok(matches(service.spec.selector, podLabels), `${service.metadata.name} selects the shards`);
      for (const port of service.spec.ports) assert.ok(portNames.has(port.targetPort), `${service.metadata.name} port ${port.targetPort}`);
    }
    const headless = services.find((s) => s.spec.clusterIP === 'None');
    assert.ok(headless, 'a headless Service');
    assert.equal(headless.spec.publishNotReadyAddresses, true, 'shard names resolve while a shard starts');
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget');
    assert.ok(pdb, 'a PodDisruptionBudget');
    assert.ok(matches(pdb.spec.selector.matchLabels, podLabels));
    assert.equal(pdb.spec.maxUnavailable, 1);
  });

  test(`${name}: the helm test pod checks every shard's health, in shard-list order`, () => {
    const pod = findObject(objects, 'Pod');
    assert.equal(pod.metadata.annotations['helm.sh/hook'], 'test');
    assert.equal(pod.spec.restartPolicy, 'Never');
    const addresses = pod.spec.containers.map((c) => {
      assert.deepEqual(c.command, ['/usr/local/bin/grpc_health_probe']);
      assert.ok(c.args.includes(`-service=${HEALTH_SERVICE}`));
      return c.args.find((a) => a.startsWith('-addr=')).slice('-addr='.length);
    });
    assert.deepEqual(addresses, expectedShards(objects));
  });
}

test('defaults: two shards, no optional objects, native gRPC probes on grpc.health.v1', () => {
  const objects = rendered.defaults;
  assert.deepEqual(objects.map((o) => o.kind).sort(),
    ['Pod', 'PodDisruptionBudget', 'Service', 'Service', 'ServiceAccount', 'StatefulSet']);
  const sts = findObject(objects, 'StatefulSet');
  assert.equal(sts.spec.replicas, 2);
  assert.equal(sts.spec.podManagementPolicy, 'Parallel');
  const container = aggregatorContainer(objects);
  const grpcPort = container.ports.find((p) => p.name === 'grpc').containerPort;
  for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    const spec = container[probe];
    assert.deepEqual(spec.grpc, { port: grpcPort, service: HEALTH_SERVICE }, `${probe} is a native grpc probe`);
    for (const other of ['exec', 'httpGet', 'tcpSocket']) assert.equal(spec[other], undefined, `${probe} has no ${other}`);
  }
  assert.equal(sts.spec.template.spec.terminationGracePeriodSeconds, 20 + 10);
  assert.equal(flagMap(container.args).get('drain_timeout'), '20s');
  assert.equal(container.image, 'entrograd-aggregator:0.1.0');
  assert.equal(container.resources.requests.cpu, '1');
  for (const flag of ['tls_cert', 'token_file', 'reflection', 'health_listen']) assert.ok(!flagMap(container.args).has(flag));
  assert.ok(!container.ports.some((p) => p.name === 'health'), 'no health-only port without TLS');
});

test('one shard: the shard list has one address', () => {
  assert.deepEqual(expectedShards(rendered['one shard']),
    ['train-entrograd-0.train-entrograd-headless.ml.svc.cluster.local:50051']);
});

for (const name of ['three shards with the training job', 'every feature with the training job']) {
  test(`${name}: the Job's shard list is the StatefulSet's pod DNS names in order`, () => {
    const objects = rendered[name];
    const job = findObject(objects, 'Job');
    const worker = job.spec.template.spec.containers.find((c) => c.name === 'worker');
    const flags = flagMap(worker.args);
    // entrograd-worker splits --shards on ',' and skips empty entries.
    const shards = flags.get('shards').split(',').filter((s) => s !== '');
    assert.deepEqual(shards, expectedShards(objects));
    assert.deepEqual(shards, [0, 1, 2].map((i) => `train-entrograd-${i}.train-entrograd-headless.ml.svc.cluster.local:50051`));
    assert.equal(new Set(shards).size, shards.length, 'no repeated shard');
  });

  test(`${name}: indexed Job, one pod per rank, rank from the completion index`, () => {
    const objects = rendered[name];
    const job = findObject(objects, 'Job');
    const workers = name.startsWith('three') ? 2 : 4;
    assert.equal(job.spec.completionMode, 'Indexed');
    assert.equal(job.spec.completions, workers);
    assert.equal(job.spec.parallelism, workers, 'every rank runs at once (synchronous rounds)');
    const pod = job.spec.template.spec;
    assert.equal(pod.restartPolicy, 'OnFailure');
    const worker = pod.containers.find((c) => c.name === 'worker');
    const flags = flagMap(worker.args);
    const known = abslFlags(WORKER_FLAGS);
    for (const flag of flags.keys()) assert.ok(known.has(flag), `--${flag} is not an entrograd-worker flag`);
    assert.equal(flags.get('world_size'), String(workers));
    assert.equal(flags.get('rank'), '$(ENTROGRAD_RANK)');
    const rank = worker.env.find((e) => e.name === 'ENTROGRAD_RANK');
    assert.equal(rank.valueFrom.fieldRef.fieldPath, "metadata.annotations['batch.kubernetes.io/job-completion-index']");
    // --out must be on a writable volume (the root filesystem is read-only).
    const out = flags.get('out');
    assert.ok(worker.volumeMounts.some((m) => out.startsWith(`${m.mountPath}/`) && !m.readOnly), `--out=${out} is on a mounted volume`);
    if (flags.has('metrics_listen')) {
      const port = worker.ports.find((p) => p.name === 'metrics').containerPort;
      assert.equal(flags.get('metrics_listen'), `0.0.0.0:${port}`);
    }
    assert.ok(matches({ 'app.kubernetes.io/component': 'worker' }, job.spec.template.metadata.labels));
  });
}

test('every feature with TLS: native gRPC probes on the plaintext health port, certificates mounted where the flags point', () => {
  const objects = rendered['every feature with TLS'];
  const sts = findObject(objects, 'StatefulSet');
  const pod = sts.spec.template.spec;
  const container = aggregatorContainer(objects);
  const flags = flagMap(container.args);
  const tlsMount = container.volumeMounts.find((m) => m.name === 'tls');
  assert.equal(tlsMount.readOnly, true);
  for (const [flag, file] of [['tls_cert', 'tls.crt'], ['tls_key', 'tls.key'], ['tls_client_ca', 'ca.crt']]) {
    assert.equal(flags.get(flag), `${tlsMount.mountPath}/${file}`);
  }
  assert.equal(pod.volumes.find((v) => v.name === 'tls').secret.secretName, 'entrograd-tls');
  // The kubelet's gRPC probe cannot speak TLS: it asks --health_listen, a
  // plaintext port that serves grpc.health.v1 alone.
  const healthPort = container.ports.find((p) => p.name === 'health').containerPort;
  assert.equal(flags.get('health_listen'), `0.0.0.0:${healthPort}`);
  assert.notEqual(healthPort, container.ports.find((p) => p.name === 'grpc').containerPort);
  for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    assert.deepEqual(container[probe].grpc, { port: healthPort, service: HEALTH_SERVICE }, `${probe} is a native grpc probe`);
    assert.equal(container[probe].exec, undefined);
  }
  const testPod = findObject(objects, 'Pod');
  for (const c of testPod.spec.containers) {
    assert.ok(c.args.includes('-tls'));
    assert.equal(c.image, 'registry.example.com/entrograd/aggregator:0.1.0-debug');
  }
  assert.equal(sts.spec.template.spec.terminationGracePeriodSeconds, 45 + 15);
  assert.equal(flags.get('drain_timeout'), '45s');
  assert.equal(flags.get('memory_quota_bytes'), '8589934592');
  assert.equal(container.image, 'registry.example.com/entrograd/aggregator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef');
  // An existing Secret: the chart makes none.
  assert.equal(objects.filter((o) => o.kind === 'Secret').length, 0);
  assert.equal(pod.volumes.find((v) => v.name === 'auth').secret.secretName, 'entrograd-tokens');
  assert.equal(flags.get('token_file'), '/etc/entrograd/auth/tokens');
});

// The worker's TLS flags point into a read-only mount of the aggregator's
// Secret that holds exactly the files they name: the private key only with
// mTLS, when the worker must present the certificate.
function assertWorkerTls(objects, clientAuth) {
  const job = findObject(objects, 'Job');
  const pod = job.spec.template.spec;
  const worker = pod.containers.find((c) => c.name === 'worker');
  const flags = flagMap(worker.args);
  const mount = worker.volumeMounts.find((m) => m.name === 'tls');
  assert.ok(mount, 'the worker mounts the TLS Secret');
  assert.equal(mount.readOnly, true);
  const volume = pod.volumes.find((v) => v.name === 'tls');
  assert.equal(volume.secret.secretName, 'entrograd-tls', 'the same Secret as the aggregator');
  const expected = clientAuth
    ? [['tls_ca', 'ca.crt'], ['tls_cert', 'tls.crt'], ['tls_key', 'tls.key']]
    : [['tls_ca', 'ca.crt']];
  for (const [flag, file] of expected) assert.equal(flags.get(flag), `${mount.mountPath}/${file}`);
  if (!clientAuth) for (const flag of ['tls_cert', 'tls_key']) assert.ok(!flags.has(flag), `no --${flag} without mTLS`);
  assert.deepEqual(volume.secret.items.map((i) => i.key).sort(), expected.map(([, file]) => file).sort());
  for (const item of volume.secret.items) assert.equal(item.path, item.key);
  const known = abslFlags(WORKER_FLAGS);
  for (const flag of flags.keys()) assert.ok(known.has(flag), `--${flag} is not an entrograd-worker flag`);
}

test('every feature with TLS: the training Job gets --tls_ca, --tls_cert and --tls_key (mTLS)', () => {
  assertWorkerTls(rendered['every feature with TLS'], true);
});

test('the training job with server-only TLS: the workers get --tls_ca only', () => {
  assertWorkerTls(rendered['the training job with server-only TLS'], false);
});

test('without TLS the training Job has no TLS flags or mount', () => {
  for (const name of ['three shards with the training job', 'every feature with the training job']) {
    const job = findObject(rendered[name], 'Job');
    const worker = job.spec.template.spec.containers.find((c) => c.name === 'worker');
    for (const flag of ['tls_ca', 'tls_cert', 'tls_key']) assert.ok(!flagMap(worker.args).has(flag), `${name}: --${flag}`);
    assert.ok(!worker.volumeMounts.some((m) => m.name === 'tls'), name);
  }
});

test('every feature with the training job: tokens reach the aggregator and the workers', () => {
  const objects = rendered['every feature with the training job'];
  const secret = findObject(objects, 'Secret');
  // The aggregator's token file format (aggregator/auth/token_store.h):
  // "JOB_ID TOKEN" per line.
  const lines = secret.stringData.tokens.split('\n').filter((l) => l.trim() !== '');
  const tokens = Object.fromEntries(lines.map((line) => {
    const fields = line.trim().split(/\s+/);
    assert.equal(fields.length, 2, `token line ${JSON.stringify(line)} has two fields`);
    return fields;
  }));
  assert.deepEqual(tokens, { '*': 'shared-token-abcdef', 'fashion-mnist': 'fm-token-0123456789' });
  assert.equal(secret.stringData['worker-token'], 'fm-token-0123456789');

  const sts = findObject(objects, 'StatefulSet');
  const container = aggregatorContainer(objects);
  const tokenFile = flagMap(container.args).get('token_file');
  const mount = container.volumeMounts.find((m) => m.name === 'auth');
  const volume = sts.spec.template.spec.volumes.find((v) => v.name === 'auth');
  assert.equal(volume.secret.secretName, secret.metadata.name);
  assert.equal(tokenFile, `${mount.mountPath}/${volume.secret.items[0].path}`);
  assert.ok(sts.spec.template.metadata.annotations['checksum/auth'], 'shards restart when tokens change');

  const job = findObject(objects, 'Job');
  const worker = job.spec.template.spec.containers[0];
  const workerMount = worker.volumeMounts.find((m) => m.name === 'auth');
  const workerVolume = job.spec.template.spec.volumes.find((v) => v.name === 'auth');
  assert.equal(workerVolume.secret.secretName, secret.metadata.name);
  assert.equal(flagMap(worker.args).get('token_file'), `${workerMount.mountPath}/${workerVolume.secret.items[0].path}`);
  assert.equal(workerVolume.secret.items[0].key, 'worker-token');
  assert.ok(flagMap(worker.args).has('per_layer_metrics'));
});

for (const name of ['every feature with TLS', 'every feature with the training job']) {
  test(`${name}: ServiceMonitor, PrometheusRule and dashboard ConfigMap carry the real files`, () => {
    const objects = rendered[name];
    const monitor = findObject(objects, 'ServiceMonitor');
    const metricsService = findObject(objects, 'Service', (s) => s.spec.clusterIP !== 'None');
    assert.ok(matches(monitor.spec.selector.matchLabels, metricsService.metadata.labels), 'ServiceMonitor selects the metrics Service');
    assert.deepEqual(monitor.spec.namespaceSelector.matchNames, [NAMESPACE]);
    assert.equal(monitor.spec.endpoints[0].port, metricsService.spec.ports[0].name);
    assert.equal(monitor.spec.endpoints[0].path, '/metrics');

    const YAML = npmPackage('yaml');
    const rules = YAML.parse(fs.readFileSync(path.join(REPO, 'deploy/k8s/prometheus/rules.yaml'), 'utf8'));
    assert.deepEqual(findObject(objects, 'PrometheusRule').spec.groups, rules.groups);

    const dashboard = JSON.parse(fs.readFileSync(path.join(REPO, 'deploy/k8s/dashboards/entrograd.json'), 'utf8'));
    const configMap = findObject(objects, 'ConfigMap');
    assert.deepEqual(JSON.parse(configMap.data['entrograd.json']), dashboard);
    assert.equal(configMap.metadata.labels.grafana_dashboard, '1');
  });
}

test('every feature with the training job: the PodMonitor scrapes the workers\' metrics port', () => {
  const objects = rendered['every feature with the training job'];
  const monitor = findObject(objects, 'PodMonitor');
  const job = findObject(objects, 'Job');
  assert.ok(matches(monitor.spec.selector.matchLabels, job.spec.template.metadata.labels));
  const ports = job.spec.template.spec.containers[0].ports.map((p) => p.name);
  assert.ok(ports.includes(monitor.spec.podMetricsEndpoints[0].port));
  assert.equal(monitor.spec.podMetricsEndpoints[0].honorLabels, true, 'keeps the client metrics\' own job label');
});
