import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Tool } from '@modelcontextprotocol/client';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { buildApp } from '../../api/app';
import { decodeReference } from '../../mcp-client/tool-calls/task-reference';
import { startToolTask } from '../../mcp-client/tool-calls/tasks';
import { logger, startEngine, type Engine } from '../support/engine';

/**
 * /mcp per tenant: a tenant's MCP client sees its tenant's agents alone, calls them alone, finds
 * its tasks alone, and each method needs its role.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const suffix = randomUUID().slice(0, 8);
const endpoint = { endpointId: 'agent-engine-under-test', maxResultBytes: 256 * 1024 };

let engine: Engine;
let app: FastifyInstance;
let url: URL;
const clients: Client[] = [];

beforeAll(async () => {
  engine = await startEngine('embedded');
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY });
  url = new URL(`${await app.listen({ host: '127.0.0.1', port: 0 })}/mcp`);
}, 120_000);
afterAll(async () => {
  for (const client of clients) await client.close();
  await app?.close();
  await engine?.close();
});

async function tenantKey(roles: string[]): Promise<string> {
  const admin = { authorization: `Bearer ${ADMIN_KEY}` };
  const tenant = await app.inject({ method: 'POST', url: '/v1/tenants', headers: admin, payload: { name: `t-${randomUUID().slice(0, 8)}` } });
  const key = await app.inject({ method: 'POST', url: '/v1/keys', headers: admin, payload: { tenantId: tenant.json().id, name: 'mcp', roles } });
  expect(key.statusCode).toBe(201);
  return key.json().key;
}

async function agentOf(key: string, name: string, text: string): Promise<void> {
  const res = await app.inject({
    method: 'POST', url: '/v1/agents', headers: { authorization: `Bearer ${key}` },
    payload: { name, mcpTasks: true, model: { provider: 'scripted', script: [{ text }] } },
  });
  expect(res.statusCode).toBe(201);
}

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'tenant-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  clients.push(client);
  return client;
}

describe('/mcp per tenant', () => {
  const shared = `shared_${suffix}`;
  const onlyA = `only_a_${suffix}`;
  let a: Client;
  let b: Client;
  beforeAll(async () => {
    const [keyA, keyB] = [await tenantKey(['read', 'run', 'decide', 'manage']), await tenantKey(['read', 'run', 'decide', 'manage'])];
    await agentOf(keyA, shared, 'from A');
    await agentOf(keyA, onlyA, 'A alone');
    await agentOf(keyB, shared, 'from B');
    [a, b] = [await connect(keyA), await connect(keyB)];
  });

  test("tools/list and prompts/list show the tenant's agents alone", async () => {
    const toolsOf = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);
    expect(await toolsOf(a)).toEqual(expect.arrayContaining([shared, onlyA]));
    expect(await toolsOf(b)).toContain(shared);
    expect(await toolsOf(b)).not.toContain(onlyA);
    expect((await b.listPrompts()).prompts.map((p) => p.name)).not.toContain(onlyA);
    await expect(b.getPrompt({ name: onlyA })).rejects.toThrow(/Unknown prompt/);
  });

  test("a tool call runs the caller's tenant's agent of that name; another tenant's agent is no tool", async () => {
    const fromB = await b.callTool({ name: shared, arguments: { input: 'hi' } }, { timeout: 120_000 });
    expect(JSON.stringify(fromB.content)).toContain('from B');
    const refused = await b.callTool({ name: onlyA, arguments: { input: 'hi' } });
    expect(refused.isError).toBe(true);
    expect((refused.content as { text: string }[])[0].text).toBe(`No agent is exposed as the tool "${onlyA}"`);
    // A thread of A named in B's call answers as an unknown thread.
    const fromA = await a.callTool({ name: shared, arguments: { input: 'hi' } }, { timeout: 120_000 });
    const threadA = (fromA._meta as { threadId: string }).threadId;
    const onAThread = await b.callTool({ name: shared, arguments: { input: 'hi', threadId: threadA } });
    expect(onAThread.isError).toBe(true);
    expect((onAThread.content as { text: string }[])[0].text).toContain(`Thread ${threadA} does not exist`);
  });

  test("another tenant's task answers as an unknown task", async () => {
    const tool = (await a.listTools()).tools.find((t) => t.name === shared) as Tool;
    const started = await startToolTask(a, { name: shared, arguments: { input: 'as a task' } }, { ...endpoint, tool });
    if (!('reference' in started)) throw new Error(`expected a task, got ${JSON.stringify(started.result)}`);
    const { taskId } = decodeReference(started.reference, endpoint.endpointId);
    const get = (client: Client, id: string) => client.request({ method: 'tasks/get', params: { taskId: id } }, z.looseObject({}));
    await expect(get(a, taskId)).resolves.toMatchObject({ taskId });
    const unknown = await get(b, `run_${randomUUID().replace(/-/g, '')}`).catch((err: unknown) => err as { code: number; message: string });
    const foreign = await get(b, taskId).catch((err: unknown) => err as { code: number; message: string });
    expect(foreign).toMatchObject({ code: (unknown as { code: number }).code, message: expect.stringMatching(/Unknown task/) });
    const cancel = await b.request({ method: 'tasks/cancel', params: { taskId } }, z.looseObject({})).catch((err: unknown) => err);
    expect(cancel).toMatchObject({ message: expect.stringMatching(/Unknown task/) });
  });

  test('each method needs its role: a read-only key lists but may not call', async () => {
    const reader = await connect(await tenantKey(['read']));
    await expect(reader.listTools()).resolves.toBeDefined();
    await expect(reader.callTool({ name: shared, arguments: { input: 'hi' } })).rejects.toThrow(/needs the role run/);
  });
});
