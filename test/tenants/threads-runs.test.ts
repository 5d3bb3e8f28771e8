import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import { RUN_WORKFLOW_TYPE } from '../../core/run';
import type { RunView } from '../../core/run-view';
import { agentIdKey, runStatusKey, threadIdKey } from '../../core/search-attributes';
import { subAgentToolName } from '../../core/sub-agents';
import { insertRun } from '../../store/runs/runs';
import { insertThread } from '../../store/threads/threads';
import { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import { startRun } from '../../use-cases/runs/start-run';
import type { Caller } from '../../use-cases/caller';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { logger, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { tenantKeys } from '../support/tenant-keys';

/**
 * Threads, run starts and run lists per tenant: another tenant's thread answers as an unknown one
 * and is left as it was, lists show the caller's tenant's alone, an Idempotency-Key is the
 * tenant's, and a run records who started it and carries its tenant (row and TenantId).
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

interface Tenant { id: string; name: string; key: string; keyId: string; keyName: string }

/** A new tenant, and a key the operator issued for it. */
async function newTenant(): Promise<Tenant> {
  const created = await admin({ method: 'POST', url: '/v1/tenants', payload: { name: `t-${randomUUID().slice(0, 8)}` } });
  expect(created.statusCode).toBe(201);
  const tenant = created.json<{ id: string; name: string }>();
  const keyName = `runner-${tenant.name}`;
  const issued = await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: keyName, roles: ['read', 'run', 'manage'] } });
  expect(issued.statusCode).toBe(201);
  return { ...tenant, key: issued.json().key, keyId: issued.json().id, keyName };
}

/** A scripted agent of the tenant whose key this is. */
async function scriptedAgent(key: string, script: ScriptStep[], extra: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const res = await as(key)({
    method: 'POST', url: '/v1/agents', payload: { name: `agent_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, ...extra },
  });
  expect(res.statusCode).toBe(201);
  return res.json();
}

async function newThread(key: string, agentId: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await as(key)({ method: 'POST', url: '/v1/threads', payload: { agentId, metadata: { plan: 'gold' } }, headers });
  expect(res.statusCode).toBe(201);
  return res.json().id;
}

const readRun = async (key: string, runId: string) =>
  (await as(key)({ method: 'GET', url: `/v1/runs/${runId}?waitMs=30000` })).json<RunView>();

const listedRunIds = async (key: string, query: string) =>
  (await as(key)({ method: 'GET', url: `/v1/runs?${query}` })).json<{ runs: { id: string }[] }>().runs.map((r) => r.id);

/** Waits until visibility lists the run for `key` (visibility is eventually consistent). */
const listedFor = (key: string, runId: string, query = '') =>
  waitFor(async () => (await listedRunIds(key, `limit=100&${query}`)).includes(runId), 20_000, `run ${runId} listed`);

const runsOnThread = async (threadId: string) =>
  (await engine.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE thread_id = $1', [threadId])).rows[0].n;

/** B's request on A's thread answers exactly as on an id nobody has: same status and body, the id aside. */
async function answersAsUnknown(key: string, theirs: string, request: (id: string) => InjectOptions): Promise<LightMyRequestResponse> {
  const unknown = `thr_${randomUUID().replace(/-/g, '')}`;
  const [onTheirs, onUnknown] = [await as(key)(request(theirs)), await as(key)(request(unknown))];
  expect(onTheirs.statusCode).toBe(404);
  expect(onTheirs.json()).toMatchObject({ code: 'not_found', detail: `Thread ${theirs} does not exist` });
  expect(onTheirs.body.replaceAll(theirs, 'ID')).toBe(onUnknown.body.replaceAll(unknown, 'ID'));
  return onTheirs;
}

describe('threads per tenant', () => {
  test("another tenant's thread answers as an unknown one, and B's requests change nothing of it", async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const agent = await scriptedAgent(a.key, [{ text: 'hello from A' }]);
    const threadA = await newThread(a.key, agent.id);
    expect((await as(a.key)({ method: 'GET', url: `/v1/threads/${threadA}` })).json()).toMatchObject({ id: threadA, metadata: { plan: 'gold' } });

    await answersAsUnknown(b.key, threadA, (id) => ({ method: 'GET', url: `/v1/threads/${id}` }));
    await answersAsUnknown(b.key, threadA, (id) => ({ method: 'PATCH', url: `/v1/threads/${id}`, payload: { metadata: { plan: 'stolen' } } }));
    await answersAsUnknown(b.key, threadA, (id) => ({ method: 'GET', url: `/v1/threads/${id}/messages` }));
    await answersAsUnknown(b.key, threadA, (id) => ({ method: 'GET', url: `/v1/threads/${id}/sources` }));
    await answersAsUnknown(b.key, threadA, (id) => ({ method: 'POST', url: `/v1/threads/${id}/runs`, payload: { input: 'mine now' } }));
    await answersAsUnknown(b.key, threadA, (id) => ({
      method: 'POST', url: `/v1/threads/${id}/runs`, payload: { input: 'mine now' }, headers: { 'idempotency-key': randomUUID() },
    }));
    // The tenant default's key is another tenant too.
    await answersAsUnknown(API_KEY, threadA, (id) => ({ method: 'GET', url: `/v1/threads/${id}` }));

    expect((await as(a.key)({ method: 'GET', url: `/v1/threads/${threadA}` })).json()).toMatchObject({ metadata: { plan: 'gold' } });
    expect(await runsOnThread(threadA)).toBe(0);
    const { rows } = await engine.db.query('SELECT active_run_id, tenant_id FROM threads WHERE id = $1', [threadA]);
    expect(rows[0]).toEqual({ active_run_id: null, tenant_id: a.id });

    // A's own requests go through.
    const patched = await as(a.key)({ method: 'PATCH', url: `/v1/threads/${threadA}`, payload: { metadata: { plan: 'silver' } } });
    expect(patched.json()).toMatchObject({ metadata: { plan: 'silver' } });
    const run = await as(a.key)({ method: 'POST', url: `/v1/threads/${threadA}/runs`, payload: { input: 'hi' } });
    expect(run.statusCode).toBe(202);
    expect(await readRun(a.key, run.json().id)).toMatchObject({ status: 'completed', output: 'hello from A' });
    expect((await as(a.key)({ method: 'GET', url: `/v1/threads/${threadA}/messages` })).json().messages).toHaveLength(2);
    await answersAsUnknown(b.key, threadA, (id) => ({ method: 'GET', url: `/v1/threads/${id}/messages` }));
  });

  test("a tenant's thread list shows its threads alone, filtered by agent or not", async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    // An agent of the same name in each tenant (names are unique per tenant), named by each.
    const agent = await scriptedAgent(a.key, [{ text: 'listed' }]);
    for (const key of [b.key, API_KEY]) await scriptedAgent(key, [{ text: 'listed' }], { name: agent.name });
    const threadA = await newThread(a.key, agent.name);
    const threadB = await newThread(b.key, agent.name);
    const threadDefault = await newThread(API_KEY, agent.name);
    const listed = async (key: string, query = '') =>
      (await as(key)({ method: 'GET', url: `/v1/threads?limit=100${query}` })).json<{ threads: { id: string }[] }>().threads.map((t) => t.id);
    for (const query of ['', `&agentId=${agent.name}`]) {
      expect(await listed(a.key, query)).toEqual([threadA]);
      expect(await listed(b.key, query)).toEqual([threadB]);
      const ofDefault = await listed(API_KEY, query);
      expect(ofDefault).toContain(threadDefault);
      expect(ofDefault).not.toContain(threadA);
      expect(ofDefault).not.toContain(threadB);
    }
  });
});

describe('runs per tenant', () => {
  test('a run gets its thread\'s tenant, says who started it, and is listed for its tenant alone', async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const agent = await scriptedAgent(a.key, [{ text: 'done' }]);
    const threadA = await newThread(a.key, agent.id);
    const started = await as(a.key)({ method: 'POST', url: `/v1/threads/${threadA}/runs`, payload: { input: 'go' } });
    expect(started.statusCode).toBe(202);
    const runId = started.json().id as string;
    expect(await readRun(a.key, runId)).toMatchObject({ status: 'completed', startedBy: { principalId: a.keyId, name: a.keyName } });
    const { rows } = await engine.db.query('SELECT tenant_id, started_by FROM runs WHERE id = $1', [runId]);
    expect(rows[0]).toEqual({ tenant_id: a.id, started_by: { principalId: a.keyId, name: a.keyName } });
    expect((await engine.client.workflow.getHandle(runId).describe()).searchAttributes.TenantId).toEqual([a.id]);

    await listedFor(a.key, runId);
    await listedFor(a.key, runId, `threadId=${threadA}`);
    await listedFor(a.key, runId, `agentId=${agent.id}&status=completed`);
    expect(await listedRunIds(b.key, `threadId=${threadA}`)).toEqual([]);
    expect(await listedRunIds(b.key, 'limit=100')).not.toContain(runId);
    expect(await listedRunIds(API_KEY, `threadId=${threadA}`)).toEqual([]);
    // The build listing reads the database (this worker is unversioned: the run is given a build here); the tenant's runs there too.
    const buildId = `build-${randomUUID()}`;
    await engine.db.query('UPDATE runs SET deployment_name = $2, build_id = $3 WHERE id = $1', [runId, 'tenants', buildId]);
    expect(await listedRunIds(a.key, `buildId=${buildId}`)).toEqual([runId]);
    expect(await listedRunIds(b.key, `buildId=${buildId}`)).toEqual([]);
    expect(await listedRunIds(API_KEY, `buildId=${buildId}`)).toEqual([]);
  });

  test('the same Idempotency-Key in two tenants gives two threads and two runs; in default, the ids of before', async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const agent = await scriptedAgent(a.key, [{ text: 'once' }]);
    for (const by of [b.key, API_KEY]) await scriptedAgent(by, [{ text: 'once' }], { name: agent.name });
    const key = randomUUID();
    const oneShot = (by: string) =>
      as(by)({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.name, input: 'go' }, headers: { 'idempotency-key': key } });
    const [inA, inB, inDefault] = [await oneShot(a.key), await oneShot(b.key), await oneShot(API_KEY)];
    for (const res of [inA, inB, inDefault]) expect(res.statusCode).toBe(202);
    const ids = [inA, inB, inDefault].map((r) => r.json<{ id: string; threadId: string }>());
    expect(new Set(ids.map((r) => r.id)).size).toBe(3);
    expect(new Set(ids.map((r) => r.threadId)).size).toBe(3);
    // The tenant default's thread id derives from the key alone, as before tenants: its retries find what they started.
    expect(ids[2].threadId).toBe(`thr_${createHash('sha256').update(`new-thread\u0000${key}`).digest('hex').slice(0, 32)}`);
    // A retry in A is A's run; B sees A's thread as nobody's.
    expect((await oneShot(a.key)).json()).toMatchObject({ id: ids[0].id, threadId: ids[0].threadId });
    await answersAsUnknown(b.key, ids[0].threadId, (id) => ({ method: 'GET', url: `/v1/threads/${id}` }));
    const tenants = await engine.db.query<{ id: string; tenant_id: string }>('SELECT id, tenant_id FROM runs WHERE id = ANY($1) ORDER BY id', [ids.map((r) => r.id)]);
    expect(Object.fromEntries(tenants.rows.map((r) => [r.id, r.tenant_id]))).toEqual({ [ids[0].id]: a.id, [ids[1].id]: b.id, [ids[2].id]: 'ten_default' });

    // The same key on a thread: each tenant its own run on its own thread.
    const [threadA, threadB] = [await newThread(a.key, agent.name), await newThread(b.key, agent.name)];
    const onThread = (by: string, threadId: string) =>
      as(by)({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'go' }, headers: { 'idempotency-key': key } });
    const [runA, runB] = [(await onThread(a.key, threadA)).json().id, (await onThread(b.key, threadB)).json().id];
    expect(runA).not.toBe(runB);
    expect((await onThread(a.key, threadA)).json().id).toBe(runA);
  });

  test('a run the operator starts with X-Tenant-Id lands in that tenant', async () => {
    const a = await newTenant();
    const agent = await scriptedAgent(a.key, [{ text: 'for A' }]);
    const inA = { 'x-tenant-id': a.name };
    const thread = await newThread(ADMIN_KEY, agent.id, inA);
    expect((await as(a.key)({ method: 'GET', url: `/v1/threads/${thread}` })).statusCode).toBe(200);
    const onThread = await admin({ method: 'POST', url: `/v1/threads/${thread}/runs`, payload: { input: 'go' }, headers: inA });
    expect(onThread.statusCode).toBe(202);
    const oneShot = await admin({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.id, input: 'go' }, headers: inA });
    expect(oneShot.statusCode).toBe(202);
    for (const runId of [onThread.json().id, oneShot.json().id]) {
      expect(await readRun(a.key, runId)).toMatchObject({ status: 'completed', startedBy: { principalId: 'operator' } });
      const { rows } = await engine.db.query('SELECT r.tenant_id, t.tenant_id AS thread_tenant FROM runs r JOIN threads t ON t.id = r.thread_id WHERE r.id = $1', [runId]);
      expect(rows[0]).toEqual({ tenant_id: a.id, thread_tenant: a.id });
      await listedFor(a.key, runId);
      expect(await listedRunIds(API_KEY, 'limit=100')).not.toContain(runId);
    }
    // Without the header, the operator acts in default: A's thread is not there.
    expect((await admin({ method: 'POST', url: `/v1/threads/${thread}/runs`, payload: { input: 'go' } })).statusCode).toBe(404);
  });

  test("sub-agents' runs and continuations keep the tenant, in the database and in TenantId", async () => {
    const a = await newTenant();
    const child = await scriptedAgent(a.key, [{ text: 'the child answers' }], { description: 'answers' });
    const parent = await scriptedAgent(a.key, [
      { toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'answer' } }] },
      { text: 'parent heard: {{tool_results}}' },
    ], { subAgents: [child.id] });
    const threadId = await newThread(a.key, parent.id);
    const caller: Caller = { tenantId: a.id, principal: { id: a.keyId, name: a.keyName }, roles: ['read', 'run'], isOperator: false, operatorHint: '' };
    const deps = { db: engine.db, client: engine.client, taskQueue: engine.taskQueue, searchAttributes: new SearchAttributeGuard(engine.client.connection, engine.client.options.namespace, logger) };
    // Continued as new at every turn boundary.
    const { run } = await startRun(deps, caller, { threadId, input: 'go', continueAsNewAtHistoryBytes: 1 });
    const parentRun = await readRun(a.key, run.id);
    expect(parentRun).toMatchObject({ status: 'completed', output: 'parent heard: the child answers' });
    const childRunId = parentRun.toolCalls[0].childRunId!;
    const { rows } = await engine.db.query(
      'SELECT r.tenant_id, r.started_by, t.tenant_id AS thread_tenant FROM runs r JOIN threads t ON t.id = r.thread_id WHERE r.id = $1', [childRunId]);
    expect(rows[0]).toEqual({ tenant_id: a.id, thread_tenant: a.id, started_by: { principalId: a.keyId, name: a.keyName } });
    expect((await readRun(a.key, childRunId)).startedBy).toEqual({ principalId: a.keyId, name: a.keyName });
    // Every execution of the run (it continued as new) and its child's carry the tenant, and the parent's other attributes.
    const executions = async () => {
      const found: { id: string; status: string; attributes: Record<string, unknown> }[] = [];
      for await (const e of engine.client.workflow.list({ query: `WorkflowId IN ('${run.id}', '${childRunId}')` })) {
        found.push({ id: e.workflowId, status: e.status.name, attributes: e.searchAttributes });
      }
      return found;
    };
    await waitFor(async () => (await executions()).filter((e) => e.status !== 'RUNNING').length >= 3, 20_000, 'the executions listed');
    const found = await executions();
    expect(found.filter((e) => e.id === run.id && e.status === 'CONTINUED_AS_NEW').length).toBeGreaterThan(0);
    for (const e of found) expect(e.attributes.TenantId).toEqual([a.id]);
    for (const e of found.filter((x) => x.id === run.id)) expect(e.attributes.threadId).toEqual([threadId]);
    await listedFor(a.key, run.id, `threadId=${threadId}`);
    await listedFor(a.key, childRunId, `parentRunId=${run.id}`);
    expect(await listedRunIds(a.key, `threadId=${threadId}`)).toEqual([run.id]); // listed once
    expect(await listedRunIds(API_KEY, `parentRunId=${run.id}`)).toEqual([]);
  });

  test('runs of default started before TenantId (without it) are listed for default alone', async () => {
    const a = await newTenant();
    const agent = await scriptedAgent(API_KEY, [{ text: 'from before' }]);
    const thread = await insertThread(engine.db, agent.id);
    const runId = `run_${randomUUID().replace(/-/g, '')}`;
    await insertRun(engine.db, { id: runId, threadId: thread.id, agentId: agent.id, input: 'go', idempotencyKey: null, requestHash: null });
    // As a start before this engine version: no TenantId.
    const handle = await engine.client.workflow.start(RUN_WORKFLOW_TYPE, {
      workflowId: runId, taskQueue: engine.taskQueue, args: [{ runId }],
      typedSearchAttributes: [{ key: threadIdKey, value: thread.id }, { key: agentIdKey, value: agent.id }, { key: runStatusKey, value: 'running' }],
    });
    await handle.result();
    expect((await handle.describe()).searchAttributes.TenantId).toBeUndefined();
    await listedFor(API_KEY, runId, `threadId=${thread.id}`);
    expect(await listedRunIds(a.key, `threadId=${thread.id}`)).toEqual([]);
    expect(await readRun(API_KEY, runId)).toMatchObject({ status: 'completed', startedBy: null });
  });
});
