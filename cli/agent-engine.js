#!/usr/bin/env node
'use strict';
const path = require('node:path');

// A checkout with its devDependencies (`npm install`) runs the TypeScript sources through tsx, so
// the CLI never lags behind them. A production install (`npm ci --omit=dev`) has no tsx and runs
// the build of `npm run build` instead.
function loadMain() {
  let hasTsx = true;
  try {
    require.resolve('tsx/cjs/api');
  } catch {
    hasTsx = false;
  }
  if (hasTsx) {
    require('tsx/cjs/api').register();
    return require('./main.ts').main;
  }
  const built = path.join(__dirname, '..', 'dist', 'cli', 'main.js');
  try {
    return require(built).main;
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND' && err.message.includes(built)) {
      process.stderr.write('agent-engine: run `npm install` (development) or `npm run build` (production) first\n');
      process.exit(2);
    }
    throw err;
  }
}

loadMain()(process.argv.slice(2)).then(
  (code) => {
    // Let stdout drain before exiting: a piped answer must not be cut short.
    process.exitCode = code;
    process.stdout.write('', () => process.exit(code));
  },
  (err) => {
    process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
    process.exit(3);
  },
);
