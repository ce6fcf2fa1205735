// Checks rendered Kubernetes objects against kubernetes-models: validate()
// (JSON schema: types, required fields, enums) and, through tsc --strict on
// the models' TypeScript interfaces, unknown or misspelled fields, which
// validate() lets through.
'use strict';

const { npmPackage } = require('./tools');
const { typecheck } = require('./typescript');

// "apps/v1" -> ["kubernetes-models/apps/v1", ...]; core "v1" has no group.
function modelModule(apiVersion) {
  if (apiVersion.startsWith('monitoring.coreos.com/')) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  }
  return `kubernetes-models/${apiVersion}`;
}

// Throws naming the object and the failing field unless every object is a
// known kind that validates.
function validateObjects(objects) {
  for (const object of objects) {
    const where = `${object.kind}/${object.metadata && object.metadata.name}`;
    let Model;
    try {
      Model = npmPackage(`${modelModule(object.apiVersion)}/${object.kind}`)[object.kind];
    } catch (error) {
      throw new Error(`${where}: no model for ${object.apiVersion} ${object.kind} (unknown kind or API version)`);
    }
    if (!Model) throw new Error(`${where}: no model for ${object.apiVersion} ${object.kind}`);
    try {
      new Model(object).validate();
    } catch (error) {
      throw new Error(`${where} does not validate: ${error.message}`);
    }
  }
}

// Type-checks every object as an object literal of its model's interface
// (I<Kind>) under tsc --strict. Returns tsc's diagnostics ('' when clean).
function typecheckObjects(objects, label) {
  const imports = new Map();
  const lines = [];
  objects.forEach((object, index) => {
    const type = `I${object.kind}`;
    const alias = `${type}_${imports.size}`;
    const module = `${modelModule(object.apiVersion)}/${object.kind}`;
    if (!imports.has(module)) imports.set(module, alias);
    lines.push(`// ${object.kind}/${object.metadata.name}`);
    lines.push(`export const object${index}: ${imports.get(module)} = ${JSON.stringify(object, null, 2)};`);
  });
  const header = [...imports].map(([module, alias]) => {
    const kind = module.split('/').pop();
    return `import type { I${kind} as ${alias} } from '${module}';`;
  });
  return typecheck(`${label}.ts`, [...header, ...lines].join('\n') + '\n');
}

module.exports = { validateObjects, typecheckObjects };
