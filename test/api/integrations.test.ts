import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { buildApp } from '../../api/app';
import { findIntegration, findIntegrationByName } from '../../store/integrations/integrations';
import { logger, startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { freePort } from '../../platform/ports';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
// Distinctive values, so that finding one anywhere in a response or a log line means it leaked.
const SECRET = `s3cret-${randomUUID()}`;
const ENV = { IMPORT_TOKEN: `imp-${randomUUID()}`, IMPORT_KEY: `key-${randomUUID()}`, EMPTY: '' };
const suffix = () => randomUUID().slice(0, 8);

let engine: Engine;
let app: FastifyInstance;
const apiLog: string[] = [];

beforeAll(async () => {
  engine = await startEngine('embedded');
  // The API logs at debug into memory, so that the tests can look for secrets in what it logged.
  const sink = new Writable({ write(chunk: Buffer, _enc, done) { apiLog.push(chunk.toString()); done(); } });
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger: pino({ level: 'debug' }, sink), env: ENV });
});

afterAll(async () => {
  await app?.close();
  await engine?.close();
});

const json = (res: LightMyRequestResponse) => res.json();
const inject = (options: InjectOptions) => app.inject(options);
const fixtureTransport = (env: Record<string, string> = {}) => ({
  type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, env,
});

async function create(payload: Record<string, unknown>) {
  const res = await inject({ method: 'POST', url: '/v1/integrations', payload });
  expect(res.statusCode).toBe(201);
  expect(res.body).not.toContain(SECRET);
  return json(res);
}

function expectProblem(res: LightMyRequestResponse, status: number, detail?: RegExp): string {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = json(res);
  expect(body).toMatchObject({ status, detail: expect.any(String) });
  if (detail) expect(body.detail).toMatch(detail);
  return body.detail as string;
}

describe('integration CRUD', () => {
  test('create, read, list, patch and delete a stdio integration; env values never come back', async () => {
    const name = `fixture-${suffix()}`;
    const created = await create({ name, transport: fixtureTransport({ API_TOKEN: SECRET, OTHER: 'x' }), toolTimeoutMs: 5000 });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^int_/), name, toolTimeoutMs: 5000, maxTotalTimeoutMs: null, trustAnnotations: false, enabled: true,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, envKeys: ['API_TOKEN', 'OTHER'] },
    });
    expect(created.transport).not.toHaveProperty('env');

    const read = await inject({ method: 'GET', url: `/v1/integrations/${created.id}` });
    expect(read.statusCode).toBe(200);
    expect(json(read)).toEqual(created);
    const list = await inject({ method: 'GET', url: '/v1/integrations' });
    expect(list.body).not.toContain(SECRET);
    expect(json(list).integrations.map((i: { id: string }) => i.id)).toContain(created.id);

    // Changing the args keeps the stored env; the secret is still there for the worker.
    const renamed = `renamed-${suffix()}`;
    const patched = await inject({
      method: 'PATCH', url: `/v1/integrations/${created.id}`, payload: { name: renamed, enabled: false, transport: { args: ['--import', 'tsx', FIXTURE, '--x'] } },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.body).not.toContain(SECRET);
    expect(json(patched)).toMatchObject({ name: renamed, enabled: false, transport: { envKeys: ['API_TOKEN', 'OTHER'], args: ['--import', 'tsx', FIXTURE, '--x'] } });
    expect(Date.parse(json(patched).updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));
    const stored = await findIntegration(engine.db, created.id);
    expect(stored?.transport).toMatchObject({ type: 'stdio', env: { API_TOKEN: SECRET, OTHER: 'x' } });

    // Given env replaces the whole record.
    const replaced = await inject({ method: 'PATCH', url: `/v1/integrations/${created.id}`, payload: { transport: { env: { NEW_ONLY: 'y' } } } });
    expect(json(replaced).transport.envKeys).toEqual(['NEW_ONLY']);

    const del = await inject({ method: 'DELETE', url: `/v1/integrations/${created.id}` });
    expect(del.statusCode).toBe(204);
    expectProblem(await inject({ method: 'GET', url: `/v1/integrations/${created.id}` }), 404);
    expectProblem(await inject({ method: 'DELETE', url: `/v1/integrations/${created.id}` }), 404);
  });

  test('an http integration shows header names only; switching it to stdio needs a complete transport', async () => {
    const created = await create({
      name: `remote-${suffix()}`, transport: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: SECRET, 'X-Team': 'a' } },
    });
    expect(created.transport).toEqual({ type: 'http', url: 'https://mcp.example.com/mcp', headerKeys: ['Authorization', 'X-Team'] });

    expectProblem(await inject({ method: 'PATCH', url: `/v1/integrations/${created.id}`, payload: { transport: { type: 'stdio' } } }), 400, /command/);
    const switched = await inject({ method: 'PATCH', url: `/v1/integrations/${created.id}`, payload: { transport: { type: 'stdio', command: 'mcp-server' } } });
    expect(json(switched).transport).toEqual({ type: 'stdio', command: 'mcp-server', args: [], envKeys: [] });
    expect((await findIntegration(engine.db, created.id))?.transport).toEqual({ type: 'stdio', command: 'mcp-server' });
  });
});

describe('integration names and input', () => {
  test.each([
    ['1starts-with-digit', /must start with a letter|must match pattern/],
    ['has space', /must start with a letter|must match pattern/],
    ['double__underscore', /"__"/],
  ])('the name %j answers 400', async (name, detail) => {
    expectProblem(await inject({ method: 'POST', url: '/v1/integrations', payload: { name, transport: fixtureTransport() } }), 400, detail);
  });

  test('a taken name answers 409, on create and on rename', async () => {
    const a = await create({ name: `taken-${suffix()}`, transport: fixtureTransport() });
    const b = await create({ name: `other-${suffix()}`, transport: fixtureTransport() });
    expectProblem(await inject({ method: 'POST', url: '/v1/integrations', payload: { name: a.name, transport: fixtureTransport() } }), 409, new RegExp(a.name));
    expectProblem(await inject({ method: 'PATCH', url: `/v1/integrations/${b.id}`, payload: { name: a.name } }), 409, new RegExp(a.name));
  });

  test('a bad transport answers 400 naming the field, without echoing a secret value', async () => {
    const post = (transport: unknown) => inject({ method: 'POST', url: '/v1/integrations', payload: { name: `bad-${suffix()}`, transport } });
    expectProblem(await post({ type: 'stdio', args: [] }), 400, /body\.transport\.command/);
    expectProblem(await post({ type: 'http', url: 'ftp://example.com' }), 400, /body\.transport\.url/);
    expectProblem(await post({ type: 'carrier-pigeon' }), 400, /transport/);
    expectProblem(await post({ type: 'stdio', command: 'x', unexpected: 1 }), 400, /unexpected/);
    const detail = expectProblem(await post({ type: 'http', url: 'https://x.example', headers: { Authorization: `${SECRET}\r\nInjected: 1` } }), 400, /Authorization/);
    expect(detail).not.toContain(SECRET);
    expectProblem(await inject({ method: 'POST', url: '/v1/integrations', payload: { name: `t-${suffix()}`, transport: fixtureTransport(), toolTimeoutMs: 0 } }), 400);
  });
});

describe('import', () => {
  test('a Claude Desktop document with ${VAR} and ${env:VAR} creates every server; expanded values stay secret', async () => {
    const [fs, web] = [`fs-${suffix()}`, `web-${suffix()}`];
    const res = await inject({
      method: 'POST', url: '/v1/integrations/import',
      payload: {
        globalShortcut: 'Ctrl+Space',
        mcpServers: {
          [fs]: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'], env: { TOKEN: '${IMPORT_TOKEN}', MIXED: 'a-${env:IMPORT_KEY}-b', BLANK: '${EMPTY}' } },
          [web]: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${env:IMPORT_TOKEN}' } },
        },
      },
    });
    expect(res.statusCode).toBe(201);
    for (const value of Object.values(ENV).filter(Boolean)) expect(res.body).not.toContain(value);
    expect(json(res).integrations).toEqual([
      expect.objectContaining({ name: fs, transport: { type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'], envKeys: ['BLANK', 'MIXED', 'TOKEN'] } }),
      expect.objectContaining({ name: web, transport: { type: 'http', url: 'https://mcp.example.com/mcp', headerKeys: ['Authorization'] } }),
    ]);
    expect((await findIntegrationByName(engine.db, fs))?.transport).toMatchObject({ env: { TOKEN: ENV.IMPORT_TOKEN, MIXED: `a-${ENV.IMPORT_KEY}-b`, BLANK: '' } });
    expect((await findIntegrationByName(engine.db, web))?.transport).toMatchObject({ headers: { Authorization: `Bearer ${ENV.IMPORT_TOKEN}` } });
  });

  test('a VS Code document maps stdio, http and sse servers', async () => {
    const names = [`local-${suffix()}`, `streamable-${suffix()}`, `legacy-${suffix()}`];
    const res = await inject({
      method: 'POST', url: '/v1/integrations/import',
      payload: {
        inputs: [],
        servers: {
          [names[0]]: { type: 'stdio', command: 'node', args: ['server.js'], env: { KEY: '${env:IMPORT_KEY}' } },
          [names[1]]: { type: 'http', url: 'https://a.example/mcp', headers: { 'X-Key': '${IMPORT_KEY}' } },
          [names[2]]: { type: 'sse', url: 'https://b.example/sse' },
        },
      },
    });
    expect(res.statusCode).toBe(201);
    expect(res.body).not.toContain(ENV.IMPORT_KEY);
    expect(json(res).integrations.map((i: { name: string; transport: { type: string } }) => [i.name, i.transport.type])).toEqual([
      [names[0], 'stdio'], [names[1], 'http'], [names[2], 'http'],
    ]);
  });

  test('an unset variable answers 400 naming it, and nothing is created', async () => {
    const name = `unset-${suffix()}`;
    const res = await inject({
      method: 'POST', url: '/v1/integrations/import',
      payload: { servers: { [name]: { command: 'x', env: { A: '${NOT_SET_ANYWHERE}', B: '${IMPORT_TOKEN}' } } } },
    });
    const detail = expectProblem(res, 400, /NOT_SET_ANYWHERE/);
    expect(detail).not.toContain(ENV.IMPORT_TOKEN);
    expect(await findIntegrationByName(engine.db, name)).toBeUndefined();
  });

  test('a taken name answers 409 naming it, and the other servers of the document are not created', async () => {
    const existing = await create({ name: `exists-${suffix()}`, transport: fixtureTransport() });
    const fresh = `fresh-${suffix()}`;
    const res = await inject({
      method: 'POST', url: '/v1/integrations/import',
      payload: { mcpServers: { [fresh]: { command: 'a' }, [existing.name]: { command: 'b' } } },
    });
    expectProblem(res, 409, new RegExp(existing.name));
    expect(await findIntegrationByName(engine.db, fresh)).toBeUndefined();
  });

  test('bad documents answer 400 naming what is wrong', async () => {
    const post = (payload: Record<string, unknown>) => inject({ method: 'POST', url: '/v1/integrations/import', payload });
    expectProblem(await post({ other: {} }), 400,
      /^The document has neither "mcpServers" \(Claude Desktop\) nor "servers" \(VS Code\): give exactly one of them$/);
    expectProblem(await post({ mcpServers: { a: { command: 'x' } }, servers: {} }), 400, /^The document has both "mcpServers" .* and "servers"/);
    expectProblem(await post({ mcpServers: {} }), 400, /no servers/);
    expectProblem(await post({ mcpServers: { 'bad name': { command: 'x' } } }), 400, /bad name/);
    expectProblem(await post({ servers: { ok: { command: 'x', url: 'https://a.example' } } }), 400, /both command and url/);
    expectProblem(await post({ servers: { ok: { command: 'x', env: { A: '${input:token}' } } } }), 400, /\$\{input:token\}/);
    expectProblem(await post({ servers: { ok: { command: 'x', envFile: '.env' } } }), 400, /envFile/);
  });
});

describe('integrations and agents', () => {
  test('an agent with unknown integrationIds answers 400 naming them', async () => {
    const known = await create({ name: `known-${suffix()}`, transport: fixtureTransport() });
    const res = await inject({
      method: 'POST', url: '/v1/agents',
      payload: { name: `agent_${suffix()}`, model: { provider: 'scripted', script: [{ text: 'hi' }] }, integrationIds: [known.id, 'int_missing1', 'int_missing2'] },
    });
    expectProblem(res, 400, /int_missing1, int_missing2/);
  });

  test('deleting an integration an agent uses answers 409 naming the agent; after the agent goes, it deletes', async () => {
    const used = await create({ name: `used-${suffix()}`, transport: fixtureTransport() });
    const agentName = `agent_${suffix()}`;
    const agent = await inject({
      method: 'POST', url: '/v1/agents', payload: { name: agentName, model: { provider: 'scripted', script: [{ text: 'hi' }] }, integrationIds: [used.id] },
    });
    expect(agent.statusCode).toBe(201);
    expectProblem(await inject({ method: 'DELETE', url: `/v1/integrations/${used.id}` }), 409, new RegExp(agentName));
    // There is no agent deletion endpoint yet: clear the reference in the database.
    await engine.db.query('UPDATE agents SET integration_ids = $2 WHERE id = $1', [json(agent).id, []]);
    expect((await inject({ method: 'DELETE', url: `/v1/integrations/${used.id}` })).statusCode).toBe(204);
  });
});

describe('capabilities', () => {
  test('lists the fixture server\'s tools, resources and prompts through a worker', async () => {
    const fixture = await create({ name: `caps-${suffix()}`, transport: fixtureTransport({ API_TOKEN: SECRET }) });
    const res = await inject({ method: 'GET', url: `/v1/integrations/${fixture.id}/capabilities` });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(Object.keys(body).sort()).toEqual(['authorization', 'prompts', 'resourceTemplates', 'resources', 'tools']);
    expect(body.authorization).toBe('not_required');
    expect(body.tools).toContainEqual(expect.objectContaining({
      name: 'echo', description: 'Echoes the text back', annotations: { readOnlyHint: true },
      inputSchema: expect.objectContaining({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
    }));
    expect(body.tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['hang', 'fail', 'count']));
    expect(body.resources).toContainEqual(expect.objectContaining({ uri: 'fixture://readme', mimeType: 'text/plain' }));
    expect(body.prompts).toContainEqual(expect.objectContaining({ name: 'greeting', description: 'Says hello' }));
  });

  test('an unreachable server answers 502 with the reason', async () => {
    const port = await freePort();
    const http = await create({ name: `down-${suffix()}`, transport: { type: 'http', url: `http://127.0.0.1:${port}/mcp` } });
    expectProblem(await inject({ method: 'GET', url: `/v1/integrations/${http.id}/capabilities` }), 502, new RegExp(`${http.name} is unreachable: .+`));
    const stdio = await create({ name: `nocmd-${suffix()}`, transport: { type: 'stdio', command: `/nonexistent/${suffix()}` } });
    expectProblem(await inject({ method: 'GET', url: `/v1/integrations/${stdio.id}/capabilities` }), 502, /unreachable: .*ENOENT|unreachable: .+/);
  });

  test('without a worker on the task queue, the wait is bounded: 504, and the workflow is stopped', async () => {
    const lonely = await buildApp({ db: engine.db, client: engine.client, taskQueue: `nobody-${randomUUID()}`, logger, capabilitiesWaitMs: 1500 });
    try {
      const integration = await create({ name: `idle-${suffix()}`, transport: fixtureTransport() });
      const started = Date.now();
      expectProblem(await lonely.inject({ method: 'GET', url: `/v1/integrations/${integration.id}/capabilities` }), 504, /within 1500 ms/);
      expect(Date.now() - started).toBeLessThan(20_000);
      // Visibility is eventually consistent: wait until the listing shows the workflow, stopped.
      await waitFor(async () => {
        const statuses: string[] = [];
        for await (const wf of engine.client.workflow.list({ query: `WorkflowId STARTS_WITH "capabilities-${integration.id}-"` })) statuses.push(wf.status.name);
        return statuses.length === 1 && statuses[0] === 'TERMINATED';
      }, 30_000, 'the capabilities workflow to be terminated');
    } finally {
      await lonely.close();
    }
  });

  test('an integration that does not exist answers 404 without starting anything', async () => {
    expectProblem(await inject({ method: 'GET', url: '/v1/integrations/int_nope/capabilities' }), 404);
  });
});

describe('documentation', () => {
  test('/docs/json documents every integrations route', async () => {
    const res = await inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const paths = json(res).paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths['/v1/integrations']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/v1/integrations/{id}']).sort()).toEqual(['delete', 'get', 'patch']);
    expect(paths['/v1/integrations/import']).toHaveProperty('post');
    expect(paths['/v1/integrations/{id}/capabilities']).toHaveProperty('get');
  });
});

describe('logs', () => {
  // Runs last: by now every test above has sent its secrets through the API.
  test('no secret appears in any line the API logged', () => {
    expect(apiLog.some((line) => line.includes('integrations imported'))).toBe(true);
    for (const secret of [SECRET, ENV.IMPORT_TOKEN, ENV.IMPORT_KEY]) expect(apiLog.join('')).not.toContain(secret);
  });
});
