'use strict';
// Preloaded with `node --require` by the build test: requiring a package that `npm ci --omit=dev`
// leaves out (marked "dev" in package-lock.json) fails here as it would in the production image.
// Judged by where the request resolves: a production package may hold its own nested copy of a
// package whose top-level copy is dev-only (source-map-loader's iconv-lite).
const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');

const root = path.join(__dirname, '..', '..');
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
const devOnly = Object.entries(lock.packages)
  .filter(([key, entry]) => entry.dev && key.startsWith('node_modules/'))
  .map(([key]) => path.join(root, key) + path.sep);

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function resolveProductionOnly(request, ...rest) {
  const resolved = resolveFilename.call(this, request, ...rest);
  if (!Module.isBuiltin(resolved) && devOnly.some((dir) => resolved.startsWith(dir))) {
    throw Object.assign(new Error(`Cannot find module '${request}' (a devDependency, absent after npm ci --omit=dev)`), { code: 'MODULE_NOT_FOUND' });
  }
  return resolved;
};
