'use strict';
// Preloaded with `node --require` by the build test: requiring a package that `npm ci --omit=dev`
// leaves out (marked "dev" in package-lock.json) fails here as it would in the production image.
const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');

const lock = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package-lock.json'), 'utf8'));
const devOnly = new Set(Object.entries(lock.packages)
  .filter(([key, entry]) => entry.dev && /^node_modules\/(@[^/]+\/)?[^/]+$/.test(key))
  .map(([key]) => key.slice('node_modules/'.length)));

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function resolveProductionOnly(request, ...rest) {
  const name = request.startsWith('@') ? request.split('/').slice(0, 2).join('/') : request.split('/')[0];
  // A built-in module is there whatever npm installs, even when a package of that name is a devDependency.
  if (devOnly.has(name) && !Module.isBuiltin(request)) {
    throw Object.assign(new Error(`Cannot find module '${request}' (a devDependency, absent after npm ci --omit=dev)`), { code: 'MODULE_NOT_FOUND' });
  }
  return resolveFilename.call(this, request, ...rest);
};
