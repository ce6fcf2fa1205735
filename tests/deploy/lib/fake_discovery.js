// A stand-in for a Kubernetes 1.33 API server's discovery endpoints, on
// 127.0.0.1, so that `kubectl create --dry-run=client -f` (which maps every
// object's apiVersion/kind to a resource through discovery before it prints
// anything) runs without a cluster. It serves only discovery: the API groups
// and kinds a 1.33 cluster with the prometheus-operator CRDs serves for the
// kinds this chart uses (and a few neighbours), nothing else. Removed API
// versions (e.g. policy/v1beta1) are absent, as on a real 1.33 cluster.
'use strict';

const http = require('node:http');

// group/version -> [[kind, plural, namespaced]]
const RESOURCES = {
  v1: [
    ['ConfigMap', 'configmaps', true], ['Namespace', 'namespaces', false], ['Pod', 'pods', true],
    ['Secret', 'secrets', true], ['Service', 'services', true], ['ServiceAccount', 'serviceaccounts', true],
    ['PersistentVolumeClaim', 'persistentvolumeclaims', true],
  ],
  'apps/v1': [['Deployment', 'deployments', true], ['StatefulSet', 'statefulsets', true], ['DaemonSet', 'daemonsets', true]],
  'batch/v1': [['Job', 'jobs', true], ['CronJob', 'cronjobs', true]],
  'policy/v1': [['PodDisruptionBudget', 'poddisruptionbudgets', true]],
  'networking.k8s.io/v1': [['NetworkPolicy', 'networkpolicies', true], ['Ingress', 'ingresses', true]],
  'rbac.authorization.k8s.io/v1': [['Role', 'roles', true], ['RoleBinding', 'rolebindings', true]],
  'monitoring.coreos.com/v1': [
    ['ServiceMonitor', 'servicemonitors', true], ['PodMonitor', 'podmonitors', true],
    ['PrometheusRule', 'prometheusrules', true],
  ],
};
const VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

function resourceList(groupVersion) {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: RESOURCES[groupVersion].map(([kind, name, namespaced]) => ({
      name, singularName: kind.toLowerCase(), namespaced, kind, verbs: VERBS,
    })),
  };
}

function groupList() {
  const groups = new Map();
  for (const groupVersion of Object.keys(RESOURCES)) {
    if (!groupVersion.includes('/')) continue;
    const [name, version] = groupVersion.split('/');
    if (!groups.has(name)) groups.set(name, []);
    groups.get(name).push({ groupVersion, version });
  }
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups].map(([name, versions]) => ({ name, versions, preferredVersion: versions[0] })),
  };
}

// Starts the server; resolves to {url, close()}.
function startFakeDiscovery() {
  const server = http.createServer((request, response) => {
    const url = request.url.split('?')[0];
    let body = null;
    if (url === '/version') body = { major: '1', minor: '33', gitVersion: 'v1.33.0', platform: 'linux/amd64' };
    else if (url === '/api') body = { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] };
    else if (url === '/apis') body = groupList();
    else if (url === '/api/v1') body = resourceList('v1');
    else if (url.startsWith('/apis/') && RESOURCES[url.slice('/apis/'.length)]) body = resourceList(url.slice('/apis/'.length));
    if (body === null) {
      response.writeHead(404, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
      return;
    }
    response.writeHead(200, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(body));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => server.close(done)) });
    });
  });
}

module.exports = { startFakeDiscovery };
