import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app';
import { loadIntegrationsFile } from '../../use-cases/integrations/integrations-file';
import { startApiServer } from '../../api/server';
import { ConfigError, loadConfig } from '../../platform/config';
import { findIntegrationByName } from '../../store/integrations/integrations';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const SECRET = `s3cret-${randomUUID()}`;
const ENV = { IMPORT_TOKEN: SECRET, DATABASE_URL: `postgres://u:${SECRET}@db/x` };
const suffix = () => randomUUID().slice(0, 8);
const stdio = { type: 'stdio', command: 'node', args: ['server.js'] };
const http = (url = 'https://mcp.example.com/mcp') => ({ type: 'http', url, headers: { Authorization: `Bearer ${SECRET}` } });
const scripted = { provider: 'scripted', script: [{ text: 'hi' }] };

let engine: Engine;
let withAdminKey: FastifyInstance;
let offLoopback: FastifyInstance;
let local: FastifyInstance;

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  const base = { db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, env: ENV };
  withAdminKey = await buildApp({ ...base, apiKey: API_KEY, adminApiKey: ADMIN_KEY });
  offLoopback = await buildApp({ ...base, apiKey: API_KEY, listenHost: '0.0.0.0' });
  local = await buildApp(base);
});
afterAll(async () => {
  for (const app of [withAdminKey, offLoopback, local]) await app?.close();
  await engine?.close();
});

const as = (app: FastifyInstance, key?: string) => (options: InjectOptions) =>
  app.inject({ ...options, headers: { ...options.headers, ...(key ? { authorization: `Bearer ${key}` } : {}) } });

function expectProblem(res: LightMyRequestResponse, status: number, detail: RegExp): string {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().detail).toMatch(detail);
  return res.body;
}

describe('with ADMIN_API_KEY set', () => {
  const apiKey = (o: InjectOptions) => as(withAdminKey, API_KEY)(o);
  const admin = (o: InjectOptions) => as(withAdminKey, ADMIN_KEY)(o);

  test('a stdio integration needs the admin key: 403 naming the field with the API key, 201 with the admin key', async () => {
    const name = `cmd-${suffix()}`;
    const res = await apiKey({ method: 'POST', url: '/v1/integrations', payload: { name, transport: stdio } });
    expectProblem(res, 403, /body\.transport\.type.*only the operator.*ADMIN_API_KEY/);
    expect(res.json()).toMatchObject({ code: 'admin_required', field: 'body.transport.type (stdio)' });
    expect(await findIntegrationByName(engine.db, name)).toBeUndefined();
    expect((await admin({ method: 'POST', url: '/v1/integrations', payload: { name, transport: stdio } })).statusCode).toBe(201);
  });

  test('the API key creates HTTP integrations and changes their headers, but not their url; the admin key does', async () => {
    const created = await apiKey({ method: 'POST', url: '/v1/integrations', payload: { name: `web-${suffix()}`, transport: http() } });
    expect(created.statusCode).toBe(201);
    const url = `/v1/integrations/${created.json().id}`;
    const moved = await apiKey({ method: 'PATCH', url, payload: { transport: { url: 'https://attacker.example/mcp' } } });
    expectProblem(moved, 403, /body\.transport\.url/);
    expect((await findIntegrationByName(engine.db, created.json().name))?.transport).toMatchObject({ url: 'https://mcp.example.com/mcp' });
    expectProblem(await apiKey({ method: 'PATCH', url, payload: { transport: stdio } }), 403, /body\.transport\.type/);
    // The same url again is no change; new headers only replace secrets sent to the same server.
    expect((await apiKey({ method: 'PATCH', url, payload: { transport: { url: 'https://mcp.example.com/mcp', headers: { 'X-Key': 'new' } } } })).statusCode).toBe(200);
    expect((await apiKey({ method: 'PATCH', url, payload: { toolTimeoutMs: 5000 } })).statusCode).toBe(200);
    // Agent files and INTEGRATIONS_FILE find integrations by name (test/agents-mcp/operator-names.test.ts).
    expectProblem(await apiKey({ method: 'PATCH', url, payload: { name: `renamed-${suffix()}` } }), 403, /body\.name/);
    const byAdmin = await admin({ method: 'PATCH', url, payload: { transport: { url: 'https://other.example/mcp' } } });
    expect(byAdmin.statusCode).toBe(200);
    expect(byAdmin.json().transport).toEqual({ type: 'http', url: 'https://other.example/mcp', headerKeys: ['X-Key'] });
  });

  test('a stdio integration\'s command, args, cwd and env are the operator\'s to change', async () => {
    const created = await admin({ method: 'POST', url: '/v1/integrations', payload: { name: `cmd-${suffix()}`, transport: stdio } });
    const url = `/v1/integrations/${created.json().id}`;
    for (const [field, value] of [['command', 'sh'], ['args', ['-c', 'id']], ['cwd', '/tmp'], ['env', { NODE_OPTIONS: '--import=data:text/javascript,1' }]] as const) {
      expectProblem(await apiKey({ method: 'PATCH', url, payload: { transport: { [field]: value } } }), 403, new RegExp(`body\\.transport\\.${field}`));
    }
    expect((await admin({ method: 'PATCH', url, payload: { transport: { args: ['other.js'] } } })).statusCode).toBe(200);
  });

  test('an agent\'s baseUrl and apiKeyEnv need the admin key; a plain agent does not', async () => {
    const model = { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'http://attacker.example/v1', apiKeyEnv: 'OPENAI_API_KEY' };
    const refused = await apiKey({ method: 'POST', url: '/v1/agents', payload: { name: `a_${suffix()}`, model } });
    expectProblem(refused, 403, /body\.model\.baseUrl, body\.model\.apiKeyEnv/);
    expectProblem(await apiKey({ method: 'POST', url: '/v1/agents', payload: { name: `a_${suffix()}`, model: { ...model, baseUrl: undefined } } }), 403, /body\.model\.apiKeyEnv/);
    expect((await admin({ method: 'POST', url: '/v1/agents', payload: { name: `a_${suffix()}`, model } })).statusCode).toBe(201);
    expect((await apiKey({ method: 'POST', url: '/v1/agents', payload: { name: `a_${suffix()}`, model: { provider: 'openai', name: 'gpt-4o-mini' } } })).statusCode).toBe(201);
    expect((await apiKey({ method: 'POST', url: '/v1/agents', payload: { name: `a_${suffix()}`, model: scripted } })).statusCode).toBe(201);
  });

  test('the admin key is also an API key; no key at all is a 401', async () => {
    expect((await admin({ method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
    expect((await as(withAdminKey)({ method: 'GET', url: '/v1/agents' })).statusCode).toBe(401);
  });

  test('import: ${VAR} expansion and stdio servers need the admin key', async () => {
    const name = `imp-${suffix()}`;
    const withVariable = { mcpServers: { [name]: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${IMPORT_TOKEN}' } } } };
    const refused = await apiKey({ method: 'POST', url: '/v1/integrations/import', payload: withVariable });
    expectProblem(refused, 403, /body\.mcpServers\.imp-\w+\.headers\.Authorization/);
    expect(refused.body).not.toContain(SECRET);
    expectProblem(await apiKey({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [name]: { command: 'node' } } } }), 403, /stdio servers/);
    expect(await findIntegrationByName(engine.db, name)).toBeUndefined();
    const accepted = await admin({ method: 'POST', url: '/v1/integrations/import', payload: withVariable });
    expect(accepted.statusCode).toBe(201);
    expect(accepted.body).not.toContain(SECRET);
  });
});

describe('off loopback without ADMIN_API_KEY', () => {
  const apiKey = (o: InjectOptions) => as(offLoopback, API_KEY)(o);

  test('nobody creates stdio integrations or changes what runs through the API; HTTP integrations and plain agents still work', async () => {
    expectProblem(await apiKey({ method: 'POST', url: '/v1/integrations', payload: { name: `cmd-${suffix()}`, transport: stdio } }), 403,
      /non-loopback address and has no ADMIN_API_KEY.*INTEGRATIONS_FILE/);
    const created = await apiKey({ method: 'POST', url: '/v1/integrations', payload: { name: `web-${suffix()}`, transport: http() } });
    expect(created.statusCode).toBe(201);
    expectProblem(await apiKey({ method: 'PATCH', url: `/v1/integrations/${created.json().id}`, payload: { transport: { url: 'https://x.example' } } }), 403, /body\.transport\.url/);
    expectProblem(await apiKey({ method: 'POST', url: '/v1/agents', payload: { name: `a_${suffix()}`, model: { provider: 'openai', name: 'm', baseUrl: 'http://x.example/v1' } } }), 403, /body\.model\.baseUrl/);
    expect((await apiKey({ method: 'POST', url: '/v1/agents', payload: { name: `a_${suffix()}`, model: scripted } })).statusCode).toBe(201);
  });
});

describe('import expands variables only into secrets', () => {
  const post = (payload: Record<string, unknown>) => local.inject({ method: 'POST', url: '/v1/integrations/import', payload });

  test.each([
    ['args', { command: 'node', args: ['${DATABASE_URL}'] }],
    ['command', { command: '${env:DATABASE_URL}' }],
    ['cwd', { command: 'node', cwd: '/srv/${IMPORT_TOKEN}' }],
    ['url', { url: 'https://x.example/${env:IMPORT_TOKEN}' }],
  ])('a variable in %s is a 400 naming the field and the variable, and nothing is created', async (field, entry) => {
    const name = `var-${suffix()}`;
    const body = expectProblem(await post({ mcpServers: { [name]: entry } }), 400,
      new RegExp(`mcpServers\\.${name}\\.${field}: variables are expanded only in env and headers values, found \\$\\{(env:)?(DATABASE_URL|IMPORT_TOKEN)\\}`));
    expect(body).not.toContain(SECRET);
    expect(await findIntegrationByName(engine.db, name)).toBeUndefined();
  });

  test('a variable in env is stored expanded and never returned', async () => {
    const name = `env-${suffix()}`;
    const res = await post({ mcpServers: { [name]: { command: 'node', args: ['s.js'], env: { DB: '${DATABASE_URL}', TOKEN: 'x-${env:IMPORT_TOKEN}' } } } });
    expect(res.statusCode).toBe(201);
    expect(res.body).not.toContain(SECRET);
    const stored = await findIntegrationByName(engine.db, name);
    expect(stored?.transport).toMatchObject({ env: { DB: ENV.DATABASE_URL, TOKEN: `x-${SECRET}` } });
    for (const read of [`/v1/integrations/${stored!.id}`, '/v1/integrations']) expect((await local.inject({ method: 'GET', url: read })).body).not.toContain(SECRET);
  });
});

describe('INTEGRATIONS_FILE', () => {
  let dir: string;
  beforeAll(async () => {
    dir = path.join(testStack().tmpDir, `integrations-${suffix()}`);
    await mkdir(dir, { recursive: true });
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('the operator\'s file creates stdio servers (variables expanded into env), updates them by name, and is idempotent', async () => {
    const file = path.join(dir, 'mcp.json');
    const name = `file-${suffix()}`;
    const write = (args: string[]) => writeFile(file, JSON.stringify({ mcpServers: { [name]: { command: 'node', args, env: { TOKEN: '${IMPORT_TOKEN}' } } } }));
    await write(['a.js']);
    expect(await loadIntegrationsFile({ db: engine.db, file, env: ENV, logger })).toMatchObject({ created: [name], updated: [], unchanged: [] });
    expect((await findIntegrationByName(engine.db, name))?.transport).toEqual({ type: 'stdio', command: 'node', args: ['a.js'], env: { TOKEN: SECRET } });
    expect(await loadIntegrationsFile({ db: engine.db, file, env: ENV, logger })).toMatchObject({ created: [], updated: [], unchanged: [name] });
    await write(['b.js']);
    expect(await loadIntegrationsFile({ db: engine.db, file, env: ENV, logger })).toMatchObject({ created: [], updated: [name], unchanged: [] });
    expect((await findIntegrationByName(engine.db, name))?.transport).toMatchObject({ args: ['b.js'] });
  });

  test('the API loads INTEGRATIONS_FILE when it starts, before agent files', async () => {
    const file = path.join(dir, 'start.json');
    const name = `start-${suffix()}`;
    await writeFile(file, JSON.stringify({ servers: { [name]: { type: 'stdio', command: 'node', args: ['x.js'] } } }));
    const config = loadConfig({ PORT: '0', INTEGRATIONS_FILE: file, AGENTS_DIR: path.join(dir, 'no-agents'), LOG_LEVEL: 'silent' });
    const server = await startApiServer(config, { db: engine.db, client: engine.client, logger });
    try {
      expect((await findIntegrationByName(engine.db, name))?.transport).toEqual({ type: 'stdio', command: 'node', args: ['x.js'] });
    } finally {
      await server.close();
    }
  });

  test('a bad file stops the start with a message naming the file and the problem', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, JSON.stringify({ servers: { x: { command: 'node', args: ['${IMPORT_TOKEN}'] } } }));
    const err = await loadIntegrationsFile({ db: engine.db, file, env: ENV, logger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/INTEGRATIONS_FILE .*bad\.json: .*servers\.x\.args: variables are expanded only in env and headers/);
    expect((err as Error).message).not.toContain(SECRET);
    await writeFile(file, '{not json');
    await expect(loadIntegrationsFile({ db: engine.db, file, env: ENV, logger })).rejects.toThrow(/cannot be read as JSON/);
  });
});
