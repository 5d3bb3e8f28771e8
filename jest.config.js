const esmOnly = '(content-disposition|cookie)';
/** Loaded with import() by the engine: test/support/commonjs-transform.js says how jest loads them. */
const importLoaded = '(@modelcontextprotocol/ext-tasks|jose)';

/** What both projects share: where tests are, and how TypeScript and ES-module-only packages load. */
const shared = {
  rootDir: __dirname,
  roots: ['<rootDir>/test'],
  transform: {
    '/platform/(ext-tasks|jose)\\.ts$': '<rootDir>/test/support/commonjs-transform.js',
    [`/node_modules/${importLoaded}/.+\\.js$`]: '<rootDir>/test/support/commonjs-transform.js',
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }],
    // Fastify's inject (cookie@1) and @fastify/static for /docs (content-disposition@3) depend on
    // ES-module-only packages, which jest's own require cannot load on Node 20: compile them to CommonJS.
    [`/node_modules/${esmOnly}/.+\\.js$`]: ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', target: 'es2022' }, diagnostics: false }],
  },
  // Everything else in node_modules (judged by the innermost node_modules of the path) is left as it is.
  transformIgnorePatterns: [`/node_modules/(?!.*/node_modules/)(?!${esmOnly}/)(?!${importLoaded}/)`],
  // Its entry points are exported for import only, which jest's require does not resolve.
  moduleNameMapper: { '^@modelcontextprotocol/ext-tasks/(.+)$': '<rootDir>/node_modules/@modelcontextprotocol/ext-tasks/dist/$1/index.js' },
};

/** Pure code: no processes, no network, no database, no Temporal. `npm run test:unit` runs these alone. */
const unit = {
  ...shared,
  displayName: 'unit',
  testEnvironment: 'node',
  testMatch: ['**/*.unit.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
};

/** Tests that start engines: a Temporal dev server, PostgreSQL, MCP servers, API and worker processes. */
const integration = {
  ...shared,
  displayName: 'integration',
  // node, plus logs shown only for failing tests, and workers that exit as soon as they are idle.
  testEnvironment: '<rootDir>/test/support/test-environment.ts',
  testMatch: ['**/*.test.ts'],
  // test/runs/record/ re-records the committed histories; it runs only through `npm run record-histories`.
  testPathIgnorePatterns: ['/node_modules/', '\\.unit\\.test\\.ts$', '<rootDir>/test/runs/record/'],
  // Owns the Temporal dev server, the workflow bundle and both databases for the whole run.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [unit, integration],
  maxWorkers: 2,
  // A jest worker's memory grows with every engine test file it runs (about 2 GB of RSS after half
  // the suite), and the kernel takes longer than jest's 500 ms to tear down such a process when jest
  // ends it ("A worker process has failed to exit gracefully"). A worker whose heap is past this
  // after a file is replaced before the next one.
  workerIdleMemoryLimit: '600MB',
  // Global only: jest ignores a project's testTimeout. Integration tests start engines; unit tests finish in milliseconds.
  testTimeout: 120_000,
};
