'use strict';
// A jest transformer for what the engine loads with import(), which jest runs only under
// --experimental-vm-modules: platform/ext-tasks.ts (its import() becomes a require()) and the
// ES-module-only package it loads, @modelcontextprotocol/ext-tasks (whose own imports then reach the
// CommonJS build of the MCP client, the one the tests use). TypeScript's transpileModule, not ts-jest,
// because ts-jest keeps one compiler configuration per jest project, that of tsconfig.json.
const crypto = require('node:crypto');
const ts = require('typescript');

const compilerOptions = {
  module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, allowJs: true, sourceMap: true,
};

module.exports = {
  process(sourceText, sourcePath) {
    const { outputText, sourceMapText } = ts.transpileModule(sourceText, { fileName: sourcePath, compilerOptions });
    return { code: outputText, map: sourceMapText };
  },
  getCacheKey(sourceText, sourcePath) {
    return crypto.createHash('sha256').update(`${ts.version}\0${JSON.stringify(compilerOptions)}\0${sourcePath}\0${sourceText}`).digest('hex');
  },
};
