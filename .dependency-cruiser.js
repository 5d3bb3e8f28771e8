// @ts-check
/**
 * The engine's layers, checked by `npm run lint`: arrows point one way, and nothing loops.
 *   api, worker  →  workflows (definitions)  →  core/contract (pure)
 *   api, worker  →  activities  →  core
 * The run workflow imports the activities' types (for proxyActivities), never their code.
 * Type imports count: a loop through types is still a loop a reader has to untangle.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'No import loops, type imports included.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-stays-below',
      severity: 'error',
      comment: 'core/ is the shared library: it imports nothing from the layers above it.',
      from: { path: '^core/' },
      to: { path: '^(workflows|activities|api|worker)/' },
    },
    {
      name: 'activities-below-workflows',
      severity: 'error',
      comment: 'Activities import core/ only; what they share with the workflow lives in core/contract.',
      from: { path: '^activities/' },
      to: { path: '^(workflows|api|worker)/' },
    },
    {
      name: 'workflows-import-activity-types-only',
      severity: 'error',
      comment: 'Workflow code imports only the types of activities, and values from core/contract only.',
      from: { path: '^workflows/' },
      to: { path: '^(activities|api|worker)/|^core/(?!contract/)', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|test|\\.tools|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
