// Type-checks generated TypeScript with the tools' typescript under --strict,
// in a scratch project whose node_modules is the tools' node_modules.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { TOOLS, SCRATCH } = require('./tools');

let counter = 0;

// Writes `source` as `fileName` and runs tsc --noEmit --strict on it.
// Returns tsc's diagnostics, '' when it type-checks.
function typecheck(fileName, source) {
  const dir = path.join(SCRATCH, `ts-${counter++}`);
  fs.mkdirSync(dir, { recursive: true });
  fs.symlinkSync(path.join(TOOLS, 'node', 'node_modules'), path.join(dir, 'node_modules'));
  fs.writeFileSync(path.join(dir, fileName), source);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true,
      noEmit: true,
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      skipLibCheck: true,
      types: [],
    },
    files: [fileName],
  }));
  const tsc = path.join(TOOLS, 'node', 'node_modules', 'typescript', 'bin', 'tsc');
  if (!fs.existsSync(tsc)) throw new Error(`${tsc} missing: run bash scripts/setup_deploy_tools.sh`);
  const result = spawnSync(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], { encoding: 'utf8' });
  if (result.error) throw result.error;
  if (result.status === 0) return '';
  return (result.stdout + result.stderr).trim() || `tsc exited ${result.status}`;
}

module.exports = { typecheck };
