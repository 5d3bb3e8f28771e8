import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Tool } from '@modelcontextprotocol/client';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { toolNameOf } from '../../mcp-server/agent-server';
import { decodeReference } from '../../mcp-client/tool-calls/task-reference';
import { answerToolTask, cancelToolTask, pollToolTask, startToolTask, type ToolTaskStatus } from '../../mcp-client/tool-calls/tasks';
import { withTaskSession } from '../../mcp-client/tool-calls/task-session';
import { extTasks } from '../../platform/ext-tasks';
import { insertAgent } from '../../store/agents';
import { findAgentTask, insertAgentTask, listAgentTasks } from '../../store/agent-tasks';
import { z } from 'zod';
import { insertIntegration } from '../../store/integrations/integrations';
import { logger, startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import path from 'node:path';

const API_KEY = 'agent-tasks-api-key-0123456789';
const ADMIN_KEY = 'agent-tasks-admin-key-0123456789';
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const ROOT = path.join(__dirname, '..', '..');
const eras = { '2025-11-25': 'legacy', '2026-07-28': 'modern' } as const;
type Era = keyof typeof eras;
const endpoint = { endpointId: 'agent-engine-under-test', maxResultBytes: 256 * 1024 };
const suffix = () => randomUUID().slice(0, 8);

/**
 * Agents called as MCP tasks through /mcp, on both eras, with real clients: the engine's own task
 * requester (mcp-client/tool-calls/tasks.ts, built on @modelcontextprotocol/ext-tasks) over v2 SDK clients.
 * Real Temporal and PostgreSQL; the LLM is the scripted provider.
 */
describe('agent runs as MCP tasks over HTTP', () => {
  let engine: Engine;
  let modernServer: ModernHttpServer;
  const apps: FastifyInstance[] = [];
  let clients: Client[] = [];
  const urls: string[] = [];
  const tools: Record<string, string> = {};

  const startApi = async (extra: { mcpAgentTasks?: boolean } = {}) => {
    const app = await buildApp({
      db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0, ...extra,
    });
    apps.push(app);
    return `${await app.listen({ host: '127.0.0.1', port: 0 })}/mcp`;
  };

  beforeAll(async () => {
    engine = await startEngine('embedded');
    const integration = await insertIntegration(engine.db, {
      name: `tk${suffix()}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = async (key: string, script: unknown[], more: { integrationIds?: string[]; mcpTasks?: boolean } = {}) => {
      tools[key] = toolNameOf((await insertAgent(engine.db, { name: `${key}_${suffix()}`, model: { provider: 'scripted', script } as never, ...more })).name);
    };
    await agent('quick', [{ text: 'answered', delayMs: 1_500 }]);
    await agent('slow', [{ text: 'too late', delayMs: 120_000 }]);
    // A model whose key the engine may not read: the run fails at its first turn.
    tools.failing = toolNameOf((await insertAgent(engine.db, {
      name: `failing_${suffix()}`, model: { provider: 'openai', name: 'gpt-none', apiKeyEnv: 'NOT_AN_ALLOWED_KEY_ENV' },
    })).name);
    await agent('approver', [
      { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'launch' } }] },
      { text: 'result: {{tool_results}}' },
    ], { integrationIds: [integration.id] });
    await agent('plain', [{ text: 'no task for me' }], { mcpTasks: false });
    // A 2026-era server's question (its `confirm` tool asks), which the task relays.
    modernServer = await startModernHttpServer();
    const asking = await insertIntegration(engine.db, { name: `ask${suffix()}`, transport: { type: 'http', url: modernServer.url }, elicitation: true });
    await agent('asker', [
      { toolCalls: [{ name: `${asking.name}__confirm`, arguments: { what: 'ship' } }] },
      { text: 'after: {{tool_results}}' },
    ], { integrationIds: [asking.id] });
    urls.push(await startApi(), await startApi());
  }, 120_000);

  afterEach(async () => {
    await Promise.all(clients.map((c) => c.close()));
    clients = [];
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await engine?.close();
    await modernServer?.close();
  });

  async function connect(era: Era, { url = urls[0], key = API_KEY }: { url?: string; key?: string } = {}): Promise<Client> {
    const client = new Client({ name: 'task-test', version: '1.0.0' }, {
      capabilities: {}, versionNegotiation: { mode: era === '2025-11-25' ? 'legacy' : { pin: era } }, inputRequired: { autoFulfill: false },
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    clients.push(client);
    return client;
  }

  async function startTask(client: Client, key: string, input = 'hello'): Promise<{ reference: string; taskId: string }> {
    const { tools: listed } = await client.listTools();
    const tool = listed.find((t) => t.name === tools[key]) as Tool;
    const started = await startToolTask(client, { name: tools[key], arguments: { input } }, { ...endpoint, tool });
    if (!('reference' in started)) throw new Error(`expected a task, got ${JSON.stringify(started.result)}`);
    return { reference: started.reference, taskId: decodeReference(started.reference, endpoint.endpointId).taskId };
  }

  async function until(client: Client, reference: string, done: (s: ToolTaskStatus) => boolean, what: string): Promise<ToolTaskStatus> {
    let status: ToolTaskStatus = { status: 'working' };
    await waitFor(async () => done(status = await pollToolTask(client, reference, endpoint)), 60_000, what);
    return status;
  }

  describe.each(Object.keys(eras) as Era[])('protocol %s', (era) => {
    test('a task is the run: its result is read by a fresh client of another API process, after the first one closed', async () => {
      const first = await connect(era);
      const { reference, taskId } = await startTask(first, 'quick', 'ping');
      expect(taskId).toMatch(/^run_[0-9a-f]{32}$/);
      const working = await pollToolTask(first, reference, endpoint);
      expect(working).toMatchObject({ status: 'working', pollIntervalMs: 2_000 });
      await first.close();
      const other = await connect(era, { url: urls[1] });
      const done = await until(other, reference, (s) => s.status !== 'working', 'the task to finish');
      expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'answered' }], _meta: { runId: taskId } } });
      // The REST API shows the same run, with the task's input.
      const run = await apps[0].inject({ method: 'GET', url: `/v1/runs/${taskId}`, headers: { authorization: `Bearer ${API_KEY}` } });
      expect(run.json()).toMatchObject({ status: 'completed', output: 'answered' });
      const { rows } = await engine.db.query('SELECT input FROM runs WHERE id = $1', [taskId]);
      expect(rows[0].input).toBe('ping');
    });

    test('a task is never last updated before it was created: lastUpdatedAt is at or after createdAt, working and done', async () => {
      const client = await connect(era);
      const { reference } = await startTask(client, 'quick');
      const { taskId } = decodeReference(reference, endpoint.endpointId);
      const read = async () => {
        const view = await withTaskSession(client, endpoint, undefined, async ({ session }) => session.task(taskId).snapshot());
        return { status: view.status, createdAt: Date.parse(view.createdAt ?? ''), lastUpdatedAt: Date.parse(view.lastUpdatedAt ?? '') };
      };
      const working = await read();
      expect(working.status).toBe('working');
      expect(working.lastUpdatedAt).toBeGreaterThanOrEqual(working.createdAt);
      await until(client, reference, (s) => s.status === 'completed', 'the task to finish');
      const done = await read();
      expect(done.createdAt).toBe(working.createdAt);
      expect(done.lastUpdatedAt).toBeGreaterThanOrEqual(working.lastUpdatedAt);
    });

    test('a run that fails: 2025 says failed, the 2026 extension completed with an error result', async () => {
      const client = await connect(era);
      const { reference } = await startTask(client, 'failing');
      const done = await until(client, reference, (s) => s.status !== 'working', 'the task to end');
      if (era === '2025-11-25') expect(done).toMatchObject({ status: 'failed' });
      else expect(done).toMatchObject({ status: 'completed', result: { isError: true, content: [{ text: expect.stringContaining('The agent run failed') }] } });
    });

    test('cancel: the run is cancelled and the task says so', async () => {
      const client = await connect(era);
      const { reference, taskId } = await startTask(client, 'slow');
      await cancelToolTask(client, reference, endpoint);
      expect(await pollToolTask(client, reference, endpoint)).toEqual({ status: 'cancelled' });
      // Again: 2025 refuses the cancel of an ended task; the 2026 extension acknowledges it.
      if (era === '2025-11-25') await expect(cancelToolTask(client, reference, endpoint)).rejects.toMatchObject({ code: -32602 });
      else await expect(cancelToolTask(client, reference, endpoint)).resolves.toBeUndefined();
      const run = await apps[0].inject({ method: 'GET', url: `/v1/runs/${taskId}`, headers: { authorization: `Bearer ${API_KEY}` } });
      expect(run.json().status).toBe('cancelled');
    });

    test('a task waiting for an approval is input_required until it is decided', async () => {
      const client = await connect(era);
      const { reference, taskId } = await startTask(client, 'approver');
      const asking = await until(client, reference, (s) => s.status === 'input_required', 'the approval question');
      const key = Object.keys((asking as { inputRequests?: Record<string, unknown> }).inputRequests ?? {})[0];
      if (era === '2026-07-28') {
        expect(key).toMatch(/^approval:call_/);
        expect(asking).toMatchObject({ inputRequests: { [key]: { method: 'elicitation/create', params: { mode: 'form', message: expect.stringContaining('Approve this tool call?') } } } });
        await answerToolTask(client, reference, { [key]: { action: 'accept', content: { decision: 'approve' } } }, endpoint);
      } else {
        // Over stateless HTTP a 2025 client is told the status and decides through the REST API.
        const run = (await apps[0].inject({ method: 'GET', url: `/v1/runs/${taskId}`, headers: { authorization: `Bearer ${API_KEY}` } })).json();
        const decided = await apps[0].inject({
          method: 'POST', url: `/v1/runs/${taskId}/approvals/${run.pendingApprovals[0].toolCallId}`, payload: { decision: 'approve' }, headers: { authorization: `Bearer ${API_KEY}` },
        });
        expect(decided.statusCode).toBe(200);
      }
      const done = await until(client, reference, (s) => s.status === 'completed' || s.status === 'failed', 'the approved task to finish');
      expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: expect.stringContaining('launch') }] } });
    });

    test('unknown ids, runs not started as tasks and tasks of another key are all "Unknown task"', async () => {
      const client = await connect(era);
      const { reference, taskId } = await startTask(client, 'quick');
      const admin = await connect(era, { key: ADMIN_KEY });
      await expect(pollToolTask(admin, reference, endpoint)).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('Unknown task') });
      const rest = await apps[0].inject({ method: 'POST', url: '/v1/runs', payload: { agentId: (await agentIdOf(tools.quick)), input: 'not a task' }, headers: { authorization: `Bearer ${API_KEY}` } });
      expect(rest.statusCode).toBe(202);
      const restRef = reference.replace(taskId, rest.json().id);
      await expect(pollToolTask(client, restRef, endpoint)).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('Unknown task') });
      await expect(pollToolTask(client, reference.replace(taskId, 'run_nope'), endpoint)).rejects.toMatchObject({ code: -32602 });
    });

    test('opt-out: an agent with mcpTasks false, or an engine with MCP_AGENT_TASKS=false, answers the call plainly', async () => {
      const client = await connect(era);
      const { tools: listed } = await client.listTools();
      const plain = listed.find((t) => t.name === tools.plain)!;
      expect(plain.execution).toBeUndefined();
      if (era === '2025-11-25') expect(listed.find((t) => t.name === tools.quick)!.execution).toEqual({ taskSupport: 'optional' });
      else expect(listed.find((t) => t.name === tools.quick)!.execution).toBeUndefined();
      const answered = await startToolTask(client, { name: tools.plain, arguments: { input: 'x' } }, { ...endpoint, tool: { ...plain, execution: { taskSupport: 'optional' } } });
      expect(answered).toMatchObject({ result: { content: [{ text: 'no task for me' }] } });

      // The engine setting: no task capability (a client asks for tasks only where a server offers them).
      const off = await connect(era, { url: await startApi({ mcpAgentTasks: false }) });
      expect(off.getServerCapabilities()?.tasks).toBeUndefined();
      expect(off.getServerCapabilities()?.extensions ?? {}).not.toHaveProperty(['io.modelcontextprotocol/tasks']);
      const quick = (await off.listTools()).tools.find((t) => t.name === tools.quick)!;
      expect(quick.execution).toBeUndefined();
      if (era === '2025-11-25') {
        // A 2025 client that asks anyway gets the answer.
        const plainly = await startToolTask(off, { name: tools.quick, arguments: { input: 'plainly' } }, { ...endpoint, tool: { ...quick, execution: { taskSupport: 'optional' } } });
        expect(plainly).toMatchObject({ result: { content: [{ text: 'answered' }] } });
      }
    });
  });

  test('2025 tasks/list shows the caller\'s scope only; an unreadable cursor is refused', async () => {
    const client = await connect('2025-11-25');
    const mine = await startTask(client, 'quick');
    const admin = await connect('2025-11-25', { key: ADMIN_KEY });
    const theirs = await startTask(admin, 'quick');
    const listed = await withTaskSession(client, endpoint, undefined, async ({ session }) => session.listTasks());
    const ids = listed.tasks.map((t) => t.taskId);
    expect(ids).toContain(mine.taskId);
    expect(ids).not.toContain(theirs.taskId);
    const adminIds = (await withTaskSession(admin, endpoint, undefined, async ({ session }) => session.listTasks())).tasks.map((t) => t.taskId);
    expect(adminIds).toContain(theirs.taskId);
    expect(adminIds).not.toContain(mine.taskId);
    await expect(client.request({ method: 'tasks/list', params: { cursor: 'not-a-cursor' } }, z.looseObject({})))
      .rejects.toMatchObject({ code: -32602, message: expect.stringContaining('Invalid cursor') });
  });

  test('the store pages a scope\'s live tasks newest first, and forgets expired ones', async () => {
    const scope = 'admin' as const;
    const ids = Array.from({ length: 5 }, (_, i) => `run_page${i}_${suffix()}`);
    for (const runId of ids) await insertAgentTask(engine.db, { runId, scope, ttlMs: 3_600_000, pollMs: 2_000 });
    await insertAgentTask(engine.db, { runId: `run_gone_${suffix()}`, scope, ttlMs: 1, pollMs: 2_000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const pages: string[][] = [];
    let after: { position: string; runId: string } | undefined;
    for (;;) {
      const page = (await listAgentTasks(engine.db, scope, 2, after)).filter((t) => ids.includes(t.runId) || t.runId.startsWith('run_gone'));
      if (page.length === 0) break;
      pages.push(page.map((t) => t.runId));
      const last = page[page.length - 1];
      after = { position: last.position, runId: last.runId };
    }
    expect(pages.flat()).toEqual([...ids].reverse());
    expect(await findAgentTask(engine.db, ids[0], 'api')).toBeUndefined();
    expect(await findAgentTask(engine.db, ids[0], scope)).toMatchObject({ runId: ids[0], ttlMs: 3_600_000 });
  });

  test('an agent changed through the API to mcpTasks false is no longer offered as a task', async () => {
    const id = await agentIdOf(tools.approver);
    const headers = { authorization: `Bearer ${API_KEY}` };
    const changed = await apps[0].inject({ method: 'PATCH', url: `/v1/agents/${id}`, payload: { mcpTasks: false }, headers });
    expect(changed.json()).toMatchObject({ mcpTasks: false });
    try {
      const client = await connect('2025-11-25');
      expect((await client.listTools()).tools.find((t) => t.name === tools.approver)!.execution).toBeUndefined();
    } finally {
      await apps[0].inject({ method: 'PATCH', url: `/v1/agents/${id}`, payload: { mcpTasks: true }, headers });
    }
  });

  test('2026: an MCP server\'s question during the run is asked by the task, and tasks/update answers it', async () => {
    const client = await connect('2026-07-28');
    const { reference, taskId } = await startTask(client, 'asker');
    const asking = await until(client, reference, (s) => s.status === 'input_required', 'the server\'s question');
    const requests = (asking as { inputRequests?: Record<string, { params: { message: string; requestedSchema?: unknown } }> }).inputRequests ?? {};
    const [key] = Object.keys(requests);
    expect(key).toMatch(/^input:/);
    expect(requests[key].params).toMatchObject({ message: 'Really ship?', requestedSchema: { type: 'object' } });
    // Content that does not fit the question's schema is refused, and nothing is lost.
    await expect(answerToolTask(client, reference, { [key]: { action: 'accept', content: { confirm: 'not a boolean' } } }, endpoint)).rejects.toMatchObject({ code: -32602 });
    await answerToolTask(client, reference, { [key]: { action: 'accept', content: { confirm: true } } }, endpoint);
    const done = await until(client, reference, (s) => s.status === 'completed', 'the answered task');
    expect(done).toMatchObject({ result: { content: [{ text: 'after: ship: confirmed=true, state=asked:ship' }], _meta: { runId: taskId } } });
  });

  test('the docs\' client: ext-tasks starts the agent as a task, hands it off, and a fresh connection resumes it to its result', async () => {
    const { client: ext } = await extTasks();
    const first = await connect('2025-11-25');
    const session = ext.createTaskSessionFromClient(first as never, { endpointId: 'agent-engine' });
    const execution = await session.callTool(tools.quick, { input: 'A long text' }, { task: { preference: 'require' } });
    if (execution.kind !== 'task') throw new Error('expected a task');
    let saved = '';
    await execution.handoff((reference) => { saved = JSON.stringify(reference); });
    await session.close();
    await first.close();
    expect(JSON.parse(saved)).toMatchObject({ generation: 'v1', taskId: expect.stringMatching(/^run_/) });

    const later = await connect('2025-11-25', { url: urls[1] });
    const again = ext.createTaskSessionFromClient(later as never, { endpointId: 'agent-engine' });
    try {
      const resumed = await again.resumeTask(JSON.parse(saved));
      const { outcome } = await resumed.settle();
      expect(ext.resultFromTaskOutcome(outcome)).toMatchObject({ content: [{ type: 'text', text: 'answered' }], _meta: { runId: JSON.parse(saved).taskId } });
    } finally {
      await again.close();
    }
  });

  test('2026: a task method from a request that does not declare the tasks extension is -32021', async () => {
    const client = await connect('2026-07-28');
    const { taskId } = await startTask(client, 'quick');
    await expect(client.request({ method: 'tasks/get', params: { taskId } }, z.looseObject({}))).rejects.toMatchObject({ code: -32021 });
  });

  async function agentIdOf(toolName: string): Promise<string> {
    const { rows } = await engine.db.query<{ id: string }>('SELECT id FROM agents WHERE name = $1', [toolName]);
    return rows[0].id;
  }
});
