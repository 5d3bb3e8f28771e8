// @ts-check
/**
 * The engine's rooms and what each may import, checked by `npm run lint` (docs/architecture.md
 * draws them). Arrows point down this list, never up, and nothing loops: not files, not folders.
 * Type imports count: a loop through types is still a loop a reader has to untangle.
 */
const MAY_IMPORT = {
  core: [],
  // The browser page and its build: nothing of the engine (the API imports its list of files).
  console: [],
  platform: ['core'],
  store: ['core', 'platform'],
  llm: ['core', 'platform'],
  'mcp-client': ['core', 'platform'],
  sources: ['core', 'store'],
  activities: ['core', 'platform', 'store', 'llm', 'mcp-client', 'sources'],
  // Values from core/ only; activities as types (for proxyActivities): see the rule below.
  workflows: ['core', 'activities'],
  'use-cases': ['core', 'platform', 'store', 'workflows'],
  'mcp-server': ['core', 'platform', 'use-cases'],
  api: ['core', 'platform', 'store', 'use-cases', 'mcp-server', 'console'],
  worker: ['core', 'platform', 'store', 'llm', 'mcp-client', 'sources', 'activities'],
  cli: ['core', 'platform', 'store', 'use-cases', 'mcp-server'],
  dev: ['core', 'platform', 'store', 'api', 'worker', 'cli', 'console'],
};
const FOLDERS = Object.keys(MAY_IMPORT);
const any = (folders) => `^(${folders.join('|')})/`;

/**
 * mcp-client/'s sub-folders, one concern each, and which of their siblings each may import; the files
 * at its top (discovery, naming, prompts, result text) may import them, never the other way round.
 */
const MCP_CLIENT_MAY_IMPORT = {
  // a large message's bytes and a resource's large contents, spooled to files as they arrive
  'large-content': [],
  // bytes to and from a server: stdio (process groups, lines) and HTTP answers, within the message bound
  transports: ['large-content'],
  // an OAuth-protected server's tokens: authorization, refresh, the bearer on each request
  oauth: ['transports'],
  // one connected client per integration: the pool, connecting on a protocol era
  connections: ['transports', 'oauth'],
  // tool calls past one request: a 2026-era server's questions in rounds, tasks
  'tool-calls': ['connections'],
};
const MCP_CLIENT_FOLDERS = Object.keys(MCP_CLIENT_MAY_IMPORT);

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'No import loops between files, type imports included.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycles',
      severity: 'error',
      scope: 'folder',
      comment: 'No loops between folders either, sibling sub-folders included.',
      from: {},
      to: { circular: true },
    },
    ...FOLDERS.map((folder) => ({
      name: `${folder}-imports`,
      severity: /** @type {const} */ ('error'),
      comment: `${folder}/ may import only ${MAY_IMPORT[folder].join(', ') || 'itself'} of the engine.`,
      from: { path: `^${folder}/` },
      to: { path: any(FOLDERS), pathNot: any([folder, ...MAY_IMPORT[folder]]) },
    })),
    ...MCP_CLIENT_FOLDERS.map((sub) => ({
      name: `mcp-client-${sub}-imports`,
      severity: /** @type {const} */ ('error'),
      comment: `mcp-client/${sub}/ may import only ${MCP_CLIENT_MAY_IMPORT[sub].join(', ') || 'itself'} of mcp-client/.`,
      from: { path: `^mcp-client/${sub}/` },
      to: { path: '^mcp-client/', pathNot: `^mcp-client/(${[sub, ...MCP_CLIENT_MAY_IMPORT[sub]].join('|')})/` },
    })),
    {
      name: 'routes-call-use-cases',
      severity: 'error',
      comment: 'Route handlers call use cases, which own their reads and writes: api/routes/ imports nothing of store/, types included.',
      from: { path: '^api/routes/' },
      to: { path: '^store/' },
    },
    {
      name: 'workflows-import-activity-types-only',
      severity: 'error',
      comment: 'Workflow code imports only the types of activities; values come from core/ only.',
      from: { path: '^workflows/' },
      to: { path: '^activities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'pg-in-storage-only',
      severity: 'error',
      comment: 'pg and pg-copy-streams are the storage libraries\' (store/, sources/): SQL lives there.',
      from: { pathNot: '^(store|sources)/' },
      to: { path: '^node_modules/(@types/)?(pg|pg-copy-streams)/' },
    },
    {
      name: 'mcp-sdk-by-role',
      severity: 'error',
      comment: 'The MCP client code uses the v2 client package, the served side the server package; the frozen v1 copy (server-legacy) is for test fixtures only.',
      from: { path: '^(mcp-client|activities)/' },
      to: { path: '^node_modules/@modelcontextprotocol/(server|node|server-legacy)/' },
    },
    {
      name: 'no-mcp-server-legacy',
      severity: 'error',
      comment: '@modelcontextprotocol/server-legacy is a frozen v1 copy kept for the test fixtures (an OAuth authorization server, an SSE server).',
      from: {},
      to: { path: '^node_modules/@modelcontextprotocol/server-legacy/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|test|\\.tools|\\.data|console/dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Packages that publish only an exports map (the MCP SDK's) resolve, so the rules above see them.
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default', 'types'] },
  },
};
