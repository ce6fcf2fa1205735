// Shared by the deploy/k8s tests: where the repository and the tools are,
// running helm/kubectl/promtool, rendering the chart into objects.
//
// Tools come from scripts/setup_deploy_tools.sh: ${ENTROGRAD_TOOLS_DIR:-.tools}
// holds bin/helm, bin/kubectl and node/node_modules; promtool is Debian's
// (scripts/setup.sh installs prometheus). A missing tool fails the test with
// the command that installs it.
'use strict';

const { execFile, spawnSync } = require('node:child_process');
const { createRequire } = require('node:module');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..', '..');
const TOOLS = path.resolve(process.env.ENTROGRAD_TOOLS_DIR || path.join(REPO, '.tools'));
const CHART = path.join(REPO, 'deploy', 'k8s', 'charts', 'entrograd');
const VALUES = path.join(REPO, 'tests', 'deploy', 'values');
const SETUP_HINT = 'run: bash scripts/setup_deploy_tools.sh (scripts/setup.sh calls it)';

// require() of a package installed in .tools/node.
const toolsRequire = createRequire(path.join(TOOLS, 'node', 'package.json'));
function npmPackage(name) {
  try {
    return toolsRequire(name);
  } catch (error) {
    throw new Error(`npm package ${name} not found under ${TOOLS}/node: ${SETUP_HINT}\n${error.message}`);
  }
}

function toolPath(name) {
  if (name === 'promtool') {
    for (const dir of (process.env.PATH || '').split(':')) {
      const candidate = path.join(dir, 'promtool');
      if (dir && fs.existsSync(candidate)) return candidate;
    }
    throw new Error('promtool not found: run bash scripts/setup.sh (installs Debian\'s prometheus)');
  }
  const candidate = path.join(TOOLS, 'bin', name);
  if (!fs.existsSync(candidate)) throw new Error(`${candidate} missing: ${SETUP_HINT}`);
  return candidate;
}

// A scratch directory removed at exit; helm keeps its cache/config there so
// the tests never touch ~/.cache/helm.
const SCRATCH = fs.mkdtempSync(path.join(os.tmpdir(), 'entrograd-deploy-'));
process.on('exit', () => fs.rmSync(SCRATCH, { recursive: true, force: true }));
const HELM_ENV = {
  ...process.env,
  HELM_CACHE_HOME: path.join(SCRATCH, 'helm-cache'),
  HELM_CONFIG_HOME: path.join(SCRATCH, 'helm-config'),
  HELM_DATA_HOME: path.join(SCRATCH, 'helm-data'),
  KUBECONFIG: path.join(SCRATCH, 'no-kubeconfig'),
};

const TOOL_TIMEOUT_MS = 120000;
const envFor = (tool) => (tool === 'helm' || tool === 'kubectl' ? HELM_ENV : process.env);

// Runs a tool; returns {status, stdout, stderr} (never throws on exit code;
// throws when it cannot start or runs past the timeout).
function run(tool, args, options = {}) {
  const result = spawnSync(toolPath(tool), args, {
    encoding: 'utf8', env: envFor(tool), maxBuffer: 64 << 20, timeout: TOOL_TIMEOUT_MS, ...options,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

// As run, without blocking the event loop (for a tool that talks to a server
// in this process).
function runAsync(tool, args) {
  return new Promise((resolve, reject) => {
    execFile(toolPath(tool), args, { encoding: 'utf8', env: envFor(tool), maxBuffer: 64 << 20, timeout: TOOL_TIMEOUT_MS },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') return reject(error);
        resolve({ status: error ? error.code : 0, stdout, stderr });
      });
  });
}

// Like run, but throws with the tool's output unless it exits 0.
function runOk(tool, args, options = {}) {
  const result = run(tool, args, options);
  if (result.status !== 0) {
    throw new Error(`${tool} ${args.join(' ')} exited ${result.status}\n${result.stdout}\n${result.stderr}`);
  }
  return result;
}

// `helm template` of the chart. `values`: file names under tests/deploy/values;
// `set`: helm --set strings. Returns {text, objects} (objects in output order).
function renderChart({ release = 'train', namespace = 'ml', values = [], set = [], showTests = true } = {}) {
  const args = ['template', release, CHART, '--namespace', namespace];
  for (const file of values) args.push('--values', path.join(VALUES, file));
  for (const assignment of set) args.push('--set', assignment);
  // Hooks (the helm test pod) are rendered too unless --skip-tests.
  if (!showTests) args.push('--skip-tests');
  const { stdout } = runOk('helm', args);
  const YAML = npmPackage('yaml');
  const objects = YAML.parseAllDocuments(stdout)
    .map((doc) => {
      if (doc.errors.length) throw new Error(`rendered YAML does not parse: ${doc.errors[0].message}`);
      return doc.toJS();
    })
    .filter((object) => object !== null);
  return { text: stdout, objects };
}

// `helm template` expected to fail: returns its stderr.
function renderChartFails({ values = [], set = [] } = {}) {
  const args = ['template', 'train', CHART, '--namespace', 'ml'];
  for (const file of values) args.push('--values', path.join(VALUES, file));
  for (const assignment of set) args.push('--set', assignment);
  const result = run('helm', args);
  if (result.status === 0) return null;
  return result.stderr;
}

function findObject(objects, kind, predicate = () => true) {
  const found = objects.filter((o) => o.kind === kind && predicate(o));
  if (found.length !== 1) {
    throw new Error(`expected one ${kind}, found ${found.length}: ${found.map((o) => o.metadata.name).join(', ')}`);
  }
  return found[0];
}

module.exports = {
  REPO, TOOLS, CHART, VALUES, SCRATCH,
  npmPackage, toolPath, run, runAsync, runOk, renderChart, renderChartFails, findObject,
};
