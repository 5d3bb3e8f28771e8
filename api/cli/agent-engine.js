#!/usr/bin/env node
'use strict';
// The CLI is TypeScript; tsx (a runtime dependency) compiles it on the fly, so a fresh clone
// works right after `npm install`, with no build step.
require('tsx/cjs/api').register();
const { main } = require('./main.ts');

main(process.argv.slice(2)).then(
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
