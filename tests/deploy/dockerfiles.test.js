// deploy.dockerfiles: deploy/docker/Dockerfile cannot be built here (no
// container engine), so it is linted:
//  - multi-stage, BuildKit syntax line, Debian 12 base images pinned to a
//    point release (no floating tags), other images to a full version;
//  - every COPY source exists and is inside the build context that
//    .dockerignore leaves; every COPY --from names an earlier stage;
//  - one build stage runs scripts/setup.sh and scripts/build.sh with every
//    image's binary, and the sources it copies configure with its CMake
//    arguments (cmake on a copy of exactly those paths) into a build that
//    has those targets; every image copies its binaries from that stage;
//  - each image's runtime stage (--target aggregator, --target worker)
//    installs only the packages runtime_packages.sh lists, cleans the apt
//    lists, runs as the non-root uid the chart sets, exposes the chart's
//    ports, and its binaries sit where the chart looks for them.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const { REPO, SCRATCH, npmPackage } = require('./lib/tools');

const DOCKERFILE = 'deploy/docker/Dockerfile';
// The images, by the stage (--target) that makes each.
const IMAGES = {
  aggregator: { target: 'entrograd-aggregator', binaries: ['entrograd-aggregator', 'grpc_health_probe'] },
  worker: { target: 'entrograd-worker', binaries: ['entrograd-worker'] },
};
const values = npmPackage('yaml').parse(
  fs.readFileSync(path.join(REPO, 'deploy/k8s/charts/entrograd/values.yaml'), 'utf8'));

// Instructions of a Dockerfile: [{keyword, args, line}], continuation lines
// joined, comments dropped; plus the parser directives at the top.
function parseDockerfile(text) {
  const lines = text.split('\n');
  const directives = {};
  for (const line of lines) {
    const match = /^#\s*([a-z]+)\s*=\s*(\S+)\s*$/.exec(line);
    if (!match) break;
    directives[match[1]] = match[2];
  }
  const instructions = [];
  let current = null;
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (current === null && (line === '' || line.startsWith('#'))) return;
    if (current !== null && line.startsWith('#')) return; // comment inside a continuation
    const body = line.endsWith('\\') ? line.slice(0, -1) : line;
    if (current === null) {
      const [keyword, ...rest] = body.split(/\s+/);
      current = { keyword: keyword.toUpperCase(), args: rest.join(' '), line: index + 1 };
    } else {
      current.args += ` ${body}`;
    }
    if (!line.endsWith('\\')) {
      current.args = current.args.replace(/\s+/g, ' ').trim();
      instructions.push(current);
      current = null;
    }
  });
  return { directives, instructions };
}

// Splits the instructions into stages: [{image, name, instructions}].
function stagesOf(instructions) {
  const stages = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const match = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      assert.ok(match, `line ${instruction.line}: FROM ${instruction.args}`);
      stages.push({ image: match[1], name: match[2], instructions: [] });
    } else {
      assert.ok(stages.length, `line ${instruction.line}: ${instruction.keyword} before FROM`);
      stages[stages.length - 1].instructions.push(instruction);
    }
  }
  return stages;
}

// COPY/ADD arguments: {from, sources, destination}; JSON form or plain.
function copyArgs(args) {
  const flags = {};
  let rest = args;
  for (let match; (match = /^--([a-z-]+)=(\S+)\s+/.exec(rest));) {
    flags[match[1]] = match[2];
    rest = rest.slice(match[0].length);
  }
  const parts = rest.startsWith('[') ? JSON.parse(rest) : rest.split(/\s+/);
  return { from: flags.from, sources: parts.slice(0, -1), destination: parts[parts.length - 1] };
}

// .dockerignore: patterns in order, the last that matches a path or one of
// its parent directories decides; '!' re-includes.
function dockerignore() {
  const rules = fs.readFileSync(path.join(REPO, '.dockerignore'), 'utf8').split('\n')
    .map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const exclude = !l.startsWith('!');
      const pattern = (exclude ? l : l.slice(1)).replace(/^\/+|\/+$/g, '');
      const regex = new RegExp(`^${pattern.split('**').map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')).join('.*')}$`);
      return { exclude, regex };
    });
  return (relative) => {
    const segments = relative.split('/');
    let excluded = false;
    for (const { exclude, regex } of rules) {
      for (let i = 1; i <= segments.length; i++) {
        if (regex.test(segments.slice(0, i).join('/'))) { excluded = exclude; break; }
      }
    }
    return excluded;
  };
}
const isIgnored = dockerignore();

const PINNED_DEBIAN = /^debian:(12\.[0-9]+(-slim)?|bookworm-[0-9]{8}(-slim)?)(@sha256:[a-f0-9]{64})?$/;
const PINNED_OTHER = /^[a-z0-9./-]+:v?[0-9]+\.[0-9]+\.[0-9]+(@sha256:[a-f0-9]{64})?$|@sha256:[a-f0-9]{64}$/;

const { directives, instructions } = parseDockerfile(fs.readFileSync(path.join(REPO, DOCKERFILE), 'utf8'));
const stages = stagesOf(instructions);
const runArgs = (stage) => stage.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
const buildStages = stages.filter((s) => runArgs(s).some((r) => r.includes('scripts/build.sh')));

test(`${DOCKERFILE}: BuildKit syntax, multi-stage, pinned Debian 12 bases`, () => {
  assert.equal(directives.syntax, 'docker/dockerfile:1', 'BuildKit (RUN --mount) is declared');
  assert.ok(stages.length >= 3, 'a build stage and one runtime stage per image');
  const names = new Set();
  for (const stage of stages) {
    if (!names.has(stage.image)) {
      if (stage.image.startsWith('debian:')) {
        assert.match(stage.image, PINNED_DEBIAN, `${stage.image}: Debian 12 pinned to a point release`);
      } else {
        assert.match(stage.image, PINNED_OTHER, `${stage.image}: pinned to a full version or digest`);
      }
    }
    if (stage.name) names.add(stage.name);
  }
  const debian = new Set(stages.map((s) => s.image).filter((i) => i.startsWith('debian:')));
  assert.equal(debian.size, 1, 'build and runtime stages use the same Debian (the runtime package lists come from the build stage)');
});

test(`${DOCKERFILE}: COPY sources exist and are in the .dockerignore'd context; --from names earlier stages`, () => {
  const seen = [];
  let copies = 0;
  for (const stage of stages) {
    for (const instruction of stage.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')) {
      assert.equal(instruction.keyword, 'COPY', `line ${instruction.line}: COPY, not ADD`);
      const { from, sources } = copyArgs(instruction.args);
      if (from) {
        assert.ok(seen.includes(from) || PINNED_OTHER.test(from), `line ${instruction.line}: --from=${from} is an earlier stage`);
        continue;
      }
      for (const source of sources) {
        copies++;
        const relative = path.posix.normalize(source).replace(/\/$/, '');
        assert.ok(!relative.startsWith('..') && !path.isAbsolute(relative), `line ${instruction.line}: ${source} inside the context`);
        assert.ok(fs.existsSync(path.join(REPO, relative)), `line ${instruction.line}: ${source} does not exist`);
        assert.ok(!isIgnored(relative), `line ${instruction.line}: ${source} is excluded by .dockerignore`);
      }
    }
    if (stage.name) seen.push(stage.name);
  }
  assert.ok(copies > 0);
});

test(`${DOCKERFILE}: one build stage builds every image's binary, and its sources configure with those targets`, () => {
  assert.equal(buildStages.length, 1, 'exactly one stage runs scripts/build.sh: the images share it');
  const [buildStage] = buildStages;
  assert.ok(buildStage.name, 'the build stage is named, for COPY --from');
  const runs = runArgs(buildStage).join('\n');
  assert.match(runs, /bash scripts\/setup\.sh/);
  const build = /ENTROGRAD_CMAKE_ARGS="([^"]*)"\s+bash scripts\/build\.sh ([\w -]+?)\s*(?:&&|$)/.exec(runs);
  assert.ok(build, 'bash scripts/build.sh TARGET... with ENTROGRAD_CMAKE_ARGS');
  const targets = build[2].trim().split(/\s+/);
  assert.deepEqual([...targets].sort(), Object.values(IMAGES).map((i) => i.target).sort(),
    'the build stage builds exactly the images\' binaries');
  for (const { target } of Object.values(IMAGES)) {
    assert.match(runs, new RegExp(`bash scripts/runtime_packages\\.sh \\S*/${target}\\b`), `${target}'s runtime packages are listed`);
  }

  // A copy of exactly what the build stage copies, configured the same way.
  const context = path.join(SCRATCH, 'context-docker');
  for (const instruction of buildStage.instructions.filter((i) => i.keyword === 'COPY')) {
    const { from, sources } = copyArgs(instruction.args);
    if (from) continue;
    for (const source of sources) {
      fs.cpSync(path.join(REPO, source), path.join(context, source), {
        recursive: true,
        filter: (src) => !isIgnored(path.relative(REPO, src)) || path.relative(REPO, src) === '',
      });
    }
  }
  const buildDir = path.join(SCRATCH, 'build-docker');
  const configure = spawnSync('cmake', ['-S', context, '-B', buildDir, '-G', 'Ninja', ...build[1].split(/\s+/)],
    { encoding: 'utf8', timeout: 120000 });
  assert.equal(configure.status, 0, `cmake configure of the Docker context failed:\n${configure.stdout}\n${configure.stderr}`);
  const ninjaTargets = spawnSync('ninja', ['-C', buildDir, '-t', 'targets', 'all'], { encoding: 'utf8' });
  assert.equal(ninjaTargets.status, 0, ninjaTargets.stderr);
  for (const target of targets) {
    assert.match(ninjaTargets.stdout, new RegExp(`^${target}: phony$`, 'm'), `the build has ${target}`);
  }
});

for (const [stageName, expected] of Object.entries(IMAGES)) {
  test(`${DOCKERFILE} --target ${stageName}: the runtime stage is minimal, non-root and matches the chart`, () => {
    const stage = stages.find((s) => s.name === stageName);
    assert.ok(stage, `a stage named ${stageName}`);
    assert.ok(stage.image.startsWith('debian:'), 'the runtime stage is Debian');
    assert.ok(!buildStages.includes(stage), 'the runtime stage builds nothing');
    const runs = runArgs(stage);
    assert.ok(runs.some((r) => r.includes('apt-get install')), 'installs the runtime package list');
    for (const run of runs.filter((r) => r.includes('apt-get install'))) {
      assert.match(run, /--no-install-recommends/, 'no recommended packages');
      assert.match(run, /apt-get update/);
      assert.match(run, /rm -rf \/var\/lib\/apt\/lists\/\*/, 'apt lists removed in the same layer');
      assert.match(run, /xargs --arg-file=\/tmp\/runtime-packages\.txt apt-get install/, 'installs the runtime package list');
    }
    assert.ok(!runs.some((r) => /-dev\b/.test(r)), 'no -dev packages at runtime');
    const users = stage.instructions.filter((i) => i.keyword === 'USER');
    assert.equal(users.length, 1);
    const [uid, gid] = users[0].args.split(':').map(Number);
    assert.ok(uid > 0 && gid > 0, 'numeric non-root USER (the kubelet can check runAsNonRoot)');
    const chartSide = stageName === 'aggregator' ? values.aggregator : values.trainingJob;
    assert.equal(uid, chartSide.podSecurityContext.runAsUser, 'USER = the chart\'s runAsUser');
    assert.equal(gid, chartSide.podSecurityContext.runAsGroup, 'group = the chart\'s runAsGroup');

    const copied = stage.instructions.filter((i) => i.keyword === 'COPY').map((i) => copyArgs(i.args));
    for (const binary of expected.binaries) {
      assert.ok(copied.some((c) => c.from && c.destination === `/usr/local/bin/${binary}`), `/usr/local/bin/${binary} is copied in`);
    }
    // The image's binary comes from the shared build stage with the package
    // list runtime_packages.sh made of that very binary.
    const fromBuild = copied.filter((c) => c.from === buildStages[0].name);
    const binary = fromBuild.find((c) => c.destination === `/usr/local/bin/${expected.target}`);
    assert.ok(binary, `${expected.target} is copied from the build stage`);
    const packages = fromBuild.find((c) => c.destination === '/tmp/runtime-packages.txt');
    assert.ok(packages, 'the package list is copied from the build stage');
    const buildRuns = runArgs(buildStages[0]).join('\n');
    assert.ok(buildRuns.includes(`bash scripts/runtime_packages.sh ${binary.sources[0]} > ${packages.sources[0]}`),
      `${packages.sources[0]} lists the packages of ${binary.sources[0]}`);
    const entrypoint = stage.instructions.find((i) => i.keyword === 'ENTRYPOINT');
    assert.deepEqual(JSON.parse(entrypoint.args), [`/usr/local/bin/${expected.target}`]);
    const exposed = stage.instructions.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(/\s+/)).map(Number);
    const ports = stageName === 'aggregator'
      ? [values.aggregator.grpcPort, values.aggregator.metricsPort]
      : [values.trainingJob.metrics.port];
    assert.deepEqual(exposed.sort(), ports.sort(), 'EXPOSE = the chart\'s ports');
  });
}

test(`${DOCKERFILE}: a build without --target makes the aggregator`, () => {
  assert.equal(stages[stages.length - 1].name, 'aggregator');
});

test('runtime_packages.sh names the Debian packages of a binary\'s libraries', () => {
  const script = path.join(REPO, 'scripts', 'runtime_packages.sh');
  const list = (binary) => {
    const result = spawnSync('bash', [script, binary], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    return result.stdout.trim().split('\n');
  };
  assert.ok(list(process.execPath).some((p) => /^libc6(:|$)/.test(p)), 'node links libc6');
  assert.notEqual(spawnSync('bash', [script, path.join(SCRATCH, 'missing')]).status, 0, 'a missing binary fails');
  // The real aggregator, when ctest passes the build's binary (tests/deploy/CMakeLists.txt).
  const aggregator = process.env.ENTROGRAD_AGGREGATOR_BINARY;
  if (aggregator && fs.existsSync(aggregator)) {
    const packages = list(aggregator);
    assert.ok(packages.some((p) => p.startsWith('libgrpc++')), packages.join(' '));
    assert.ok(packages.some((p) => p.startsWith('libprometheus-cpp-pull')), packages.join(' '));
    assert.ok(!packages.some((p) => p.includes('-dev')), 'runtime packages only');
  }
});

test('the chart runs grpc_health_probe where the aggregator image puts it', () => {
  // The helm test pod; the probes are the kubelet's native gRPC probes.
  const testPod = fs.readFileSync(path.join(REPO, 'deploy/k8s/charts/entrograd/templates/tests/test-health.yaml'), 'utf8');
  assert.ok(testPod.includes('- /usr/local/bin/grpc_health_probe'));
});

test('the lint itself: a floating tag, a missing COPY source and an ignored one are caught', () => {
  assert.doesNotMatch('debian:12-slim', PINNED_DEBIAN);
  assert.doesNotMatch('debian:bookworm-slim', PINNED_DEBIAN);
  assert.doesNotMatch('debian:latest', PINNED_DEBIAN);
  assert.doesNotMatch('ghcr.io/grpc-ecosystem/grpc-health-probe:latest', PINNED_OTHER);
  assert.match('debian:12.11-slim', PINNED_DEBIAN);
  assert.ok(isIgnored('build/aggregator/entrograd-aggregator'));
  assert.ok(isIgnored('.tools/bin/helm'));
  assert.ok(isIgnored('docs/ALGORITHM.md'));
  assert.ok(!isIgnored('client_lib/include/entrograd/client.h'));
  assert.ok(!fs.existsSync(path.join(REPO, 'client_lib/no-such-dir')));
  const { instructions } = parseDockerfile('FROM debian:12.11-slim AS b\nCOPY --from=b \\\n  /a /b\nRUN a \\\n  # note\n  && b\n');
  assert.deepEqual(instructions.map((i) => [i.keyword, i.args]),
    [['FROM', 'debian:12.11-slim AS b'], ['COPY', '--from=b /a /b'], ['RUN', 'a && b']]);
});
