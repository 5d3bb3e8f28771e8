import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../../api/app';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { listEvents } from '../../store/runs/events';
import { insertThread } from '../../store/threads/threads';
import { logger, startEngine, type Engine } from '../support/engine';
import { exited, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const suffix = () => randomUUID().slice(0, 8);
const WAIT_MS = 90_000;

let engine: Engine;
let app: FastifyInstance;
const children: ChildProcess[] = [];

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY });
});
afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await exited(c);
  }
  await app?.close();
  await engine?.close();
});

const as = (key: string) => (options: InjectOptions) =>
  app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
const user = as(API_KEY);
const admin = as(ADMIN_KEY);
const http = { type: 'http', url: 'https://mcp.example.com/mcp' };

describe('the approval policy of an integration', () => {
  test('setting or changing it is an admin act; the API shows it', async () => {
    const policy = { default: 'unless_read_only', tools: { delete_file: 'always' }, timeout: '30m' };
    const name = `pol-${suffix()}`;
    const refused = await user({ method: 'POST', url: '/v1/integrations', payload: { name, transport: http, approval: policy } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'admin_required', field: 'body.approval' });

    const created = await admin({ method: 'POST', url: '/v1/integrations', payload: { name, transport: http, approval: policy } });
    expect(created.statusCode).toBe(201);
    expect(created.json().approval).toEqual(policy);
    const id = created.json().id as string;

    expect((await user({ method: 'PATCH', url: `/v1/integrations/${id}`, payload: { approval: null } })).statusCode).toBe(403);
    // Other settings stay the user's to change.
    expect((await user({ method: 'PATCH', url: `/v1/integrations/${id}`, payload: { toolTimeoutMs: 5000 } })).statusCode).toBe(200);
    const patched = await admin({ method: 'PATCH', url: `/v1/integrations/${id}`, payload: { approval: { default: 'always' } } });
    expect(patched.json().approval).toEqual({ default: 'always' });
    const cleared = await admin({ method: 'PATCH', url: `/v1/integrations/${id}`, payload: { approval: null } });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json().approval).toBeNull();
  });

  test('a malformed policy is a 400 naming the field', async () => {
    for (const approval of [{ default: 'sometimes' }, { default: 'always', timeout: '24 hours' }, { default: 'always', timeout: '0s' },
      { default: 'always', tools: { x: 'unless_read_only' } }, { default: 'always', extra: 1 }]) {
      const res = await admin({ method: 'POST', url: '/v1/integrations', payload: { name: `bad-${suffix()}`, transport: http, approval } });
      expect(res.statusCode).toBe(400);
      expect(res.json().detail).toMatch(/approval/);
    }
  });

  test('a Claude Desktop import may carry it (admin only)', async () => {
    const name = `imp-${suffix()}`;
    const doc = { mcpServers: { [name]: { url: 'https://mcp.example.com/mcp', approval: { default: 'always', timeout: '1h' } } } };
    expect((await user({ method: 'POST', url: '/v1/integrations/import', payload: doc })).statusCode).toBe(403);
    const imported = await admin({ method: 'POST', url: '/v1/integrations/import', payload: doc });
    expect(imported.statusCode).toBe(201);
    expect(imported.json().integrations[0].approval).toEqual({ default: 'always', timeout: '1h' });
    const bad = { mcpServers: { [`imp-${suffix()}`]: { url: 'https://mcp.example.com/mcp', approval: { default: 'perhaps' } } } };
    const refused = await admin({ method: 'POST', url: '/v1/integrations/import', payload: bad });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().detail).toMatch(/approval\.default/);
  });
});

describe('a run waiting for approval', () => {
  const workerEnv = () => ({ DATABASE_URL: testStack().databases.embedded, TASK_QUEUE: engine.taskQueue, SECRETS_KEY: testStack().secretsKey });

  test('survives its worker being killed: a new worker takes the decision and the run goes on; the decision records the key kind', async () => {
    const fx = await insertIntegration(engine.db, {
      name: `fx-${suffix()}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fx.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'one' } }] },
        { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'two' } }] },
        { text: '{{tool_results}}' },
      ] },
    });
    const first = spawnWorker(workerEnv());
    children.push(first);
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    const pending = async () => (await user({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingApprovals: { toolCallId: string }[] }>().pendingApprovals;
    await waitFor(async () => (await pending()).length === 1, WAIT_MS, 'the first call waits');

    first.kill('SIGKILL');
    await exited(first);
    children.push(spawnWorker(workerEnv()));

    const approved = await user({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_1`, payload: { decision: 'approve' } });
    expect(approved.statusCode).toBe(200);
    await waitFor(async () => (await pending()).some((p) => p.toolCallId === 'call_2_1'), WAIT_MS, 'the second call waits');
    const denied = await admin({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_2_1`, payload: { decision: 'deny', reason: 'enough' } });
    expect(denied.statusCode).toBe(200);

    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'Tool call denied by a reviewer: enough' });
    expect(result.toolCalls.map((c) => c.result)).toEqual(['echo: one', 'Tool call denied by a reviewer: enough']);
    const resolved = (await listEvents(engine.db, runId)).filter((e) => e.type === 'approval_resolved').map((e) => e.data);
    expect(resolved).toEqual([
      expect.objectContaining({ toolCallId: 'call_1_1', decision: 'approve', keyKind: 'api', by: 'api' }),
      expect.objectContaining({ toolCallId: 'call_2_1', decision: 'deny', keyKind: 'admin', by: 'api' }),
    ]);
  });
});
