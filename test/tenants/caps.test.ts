import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { runTranscript } from '../../store/runs/transcript';
import { insertTenant } from '../../store/tenants';
import { insertThread } from '../../store/threads/threads';
import { startRun } from '../../use-cases/runs/start-run';
import { operatorCaller } from '../../use-cases/caller';
import { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { logger, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { tenantKeys } from '../support/tenant-keys';

/**
 * Per-tenant caps (docs/security.md): a tenant's running runs (maxRunningRuns: a start beyond it
 * answers 429 and records nothing, however many starts come at once) and its tool calls per worker
 * (toolCallSlots: further calls wait their turn). Other tenants are not held back.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;

let engine: Engine;
let app: FastifyInstance;

beforeAll(async () => {
  ({ engine, app } = await startApiEngine('embedded', { apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0 }));
});
afterAll(() => stopApiEngine({ engine, app }));

const { as } = tenantKeys(() => app, ADMIN_KEY);
const admin = as(ADMIN_KEY);

/** A tenant with these limits, and a key of its with read, run and manage. */
async function cappedTenant(limits: Record<string, number | null>): Promise<{ id: string; name: string; key: string }> {
  const created = await admin({ method: 'POST', url: '/v1/tenants', payload: { name: `cap-${randomUUID().slice(0, 8)}`, limits } });
  expect(created.statusCode).toBe(201);
  const tenant = created.json<{ id: string; name: string; limits: unknown }>();
  expect(tenant.limits).toEqual({ maxRunningRuns: null, toolCallSlots: null, ...limits });
  const issued = await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: 'runner', roles: ['read', 'run', 'manage'] } });
  expect(issued.statusCode).toBe(201);
  return { ...tenant, key: issued.json().key };
}

async function scriptedAgent(key: string, script: ScriptStep[]): Promise<string> {
  const res = await as(key)({
    method: 'POST', url: '/v1/agents', payload: { name: `agent_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script } },
  });
  expect(res.statusCode).toBe(201);
  return res.json().id;
}

const startOneShot = (key: string, agentId: string) => as(key)({ method: 'POST', url: '/v1/runs', payload: { agentId, input: 'go' } });

const runsOfTenant = async (tenantId: string) =>
  (await engine.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE tenant_id = $1', [tenantId])).rows[0].n;

async function cancelAndWait(key: string, runId: string): Promise<void> {
  expect((await as(key)({ method: 'POST', url: `/v1/runs/${runId}/cancel` })).statusCode).toBe(202);
  await waitFor(async () => (await as(key)({ method: 'GET', url: `/v1/runs/${runId}` })).json().status !== 'running', 30_000, 'the run to end');
}

test('a tenant at its maxRunningRuns: further starts answer 429 and record nothing, however many come at once; an ended run frees a place', async () => {
  const acme = await cappedTenant({ maxRunningRuns: 2 });
  const agentId = await scriptedAgent(acme.key, [{ text: 'slow answer', delayMs: 120_000 }]);
  const answers = await Promise.all(Array.from({ length: 6 }, () => startOneShot(acme.key, agentId)));
  const accepted = answers.filter((a) => a.statusCode === 202).map((a) => a.json<{ id: string }>().id);
  const refused = answers.filter((a) => a.statusCode === 429);
  expect(accepted).toHaveLength(2);
  expect(refused).toHaveLength(4);
  expect(refused[0].json()).toMatchObject({ code: 'too_many_runs', maxRunningRuns: 2, detail: expect.stringContaining('maxRunningRuns 2') });
  expect(await runsOfTenant(acme.id)).toBe(2);

  // Another tenant is not held back by acme's cap.
  const own = await scriptedAgent(API_KEY, [{ text: 'hi' }]);
  expect((await startOneShot(API_KEY, own)).statusCode).toBe(202);

  // A start on an existing thread counts too; once a run has ended, its place is free.
  const thread = await as(acme.key)({ method: 'POST', url: '/v1/threads', payload: { agentId } });
  const onThread = () => as(acme.key)({ method: 'POST', url: `/v1/threads/${thread.json().id}/runs`, payload: { input: 'again' } });
  expect((await onThread()).statusCode).toBe(429);
  await cancelAndWait(acme.key, accepted[0]);
  const third = await onThread();
  expect(third.statusCode).toBe(202);

  // Lifted (null): starts are accepted again.
  const lifted = await admin({ method: 'PATCH', url: `/v1/tenants/${acme.id}`, payload: { limits: { maxRunningRuns: null } } });
  expect(lifted.json()).toMatchObject({ limits: { maxRunningRuns: null } });
  const fourth = await startOneShot(acme.key, agentId);
  expect(fourth.statusCode).toBe(202);
  for (const id of [accepted[1], third.json().id, fourth.json().id]) await cancelAndWait(acme.key, id);
}, 120_000);

test('the operator alone sets caps; a tenant reads its own, and another tenant\'s answers as unknown', async () => {
  const acme = await cappedTenant({ toolCallSlots: 3 });
  const other = await cappedTenant({});
  expect((await as(acme.key)({ method: 'PATCH', url: `/v1/tenants/${acme.id}`, payload: { limits: { toolCallSlots: 100 } } })).statusCode)
    .toBe(403);
  expect((await admin({ method: 'PATCH', url: '/v1/tenants/ten_nobody', payload: { limits: { toolCallSlots: 1 } } })).statusCode).toBe(404);
  expect((await admin({ method: 'PATCH', url: `/v1/tenants/${acme.id}`, payload: { limits: { toolCallSlots: 0 } } })).statusCode).toBe(400);
  expect((await admin({ method: 'PATCH', url: `/v1/tenants/${acme.id}`, payload: { limits: { colour: 1 } } })).statusCode).toBe(400);
  const own = await as(acme.key)({ method: 'GET', url: `/v1/tenants/${acme.name}` });
  expect(own.json()).toMatchObject({ id: acme.id, limits: { toolCallSlots: 3, maxRunningRuns: null } });
  const theirs = await as(acme.key)({ method: 'GET', url: `/v1/tenants/${other.id}` });
  const nobody = await as(acme.key)({ method: 'GET', url: '/v1/tenants/ten_nobody' });
  expect([theirs.statusCode, theirs.json().detail.replace(other.id, 'X')]).toEqual([404, nobody.json().detail.replace('ten_nobody', 'X')]);
});

test('a tenant\'s toolCallSlots: its calls beyond them wait their turn on a worker; another tenant\'s calls do not', async () => {
  const tenant = await insertTenant(engine.db, `slots-${randomUUID().slice(0, 8)}`, { toolCallSlots: 1 });
  const searchAttributes = new SearchAttributeGuard(engine.client.connection, engine.client.options.namespace, logger);
  const starts = { db: engine.db, client: engine.client, taskQueue: engine.taskQueue, searchAttributes };
  // Two integrations, so that only the tenant's share can keep the second call waiting.
  const fields = { toolTimeoutMs: 2_000, maxTotalTimeoutMs: 30_000 };
  const runCalling = async (tenantId: string, call: { name: string; arguments: Record<string, unknown> }, integrationId: string) => {
    const agent = await insertAgent(engine.db, {
      tenantId, name: `agent-${randomUUID()}`, integrationIds: [integrationId],
      model: { provider: 'scripted', script: [{ toolCalls: [call] }, { text: '{{tool_results}}' }] },
    });
    const thread = await insertThread(engine.db, agent.id, {}, tenantId);
    return (await startRun(starts, operatorCaller(tenantId), { threadId: thread.id, input: 'go' })).run.id;
  };
  const first = await insertFixtureIntegration(engine.db, fields, tenant!.id);
  const second = await insertFixtureIntegration(engine.db, fields, tenant!.id);
  const holder = await runCalling(tenant!.id, { name: `${first.name}__slow_progress`, arguments: { ms: 8_000 } }, first.id);
  await waitFor(async () => (await startedCalls(holder)) === 1, 30_000, 'the first call to take the tenant\'s slot');
  const waiter = await runCalling(tenant!.id, { name: `${second.name}__echo`, arguments: { text: 'never run' } }, second.id);
  const elsewhere = await insertFixtureIntegration(engine.db, fields);
  const free = await runCalling('ten_default', { name: `${elsewhere.name}__echo`, arguments: { text: 'served' } }, elsewhere.id);

  expect(await engine.result(free)).toMatchObject({ status: 'completed', output: expect.stringContaining('served') });
  expect(await engine.result(waiter)).toMatchObject({ status: 'completed' });
  expect(await toolResults(waiter)).toEqual([expect.stringMatching(
    /^MCP tool execution failed: timed out after \d+ ms waiting for its turn: a worker runs at most 1 tool calls of this tenant's runs at once$/,
  )]);
  expect(await engine.result(holder)).toMatchObject({ status: 'completed', output: 'done after 8000 ms' });
}, 120_000);

async function startedCalls(runId: string): Promise<number> {
  const { rows } = await engine.db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM run_events WHERE type = 'tool_call_started' AND run_id = $1", [runId]);
  return rows[0].n;
}

async function toolResults(runId: string): Promise<string[]> {
  const messages = await runTranscript(engine.db, runId);
  return messages.flatMap(({ message }) => (message.role === 'tool' ? [message.content] : []));
}
