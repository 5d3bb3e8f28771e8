import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import type { NewIntegration } from '../../core/integration';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { listEvents } from '../../store/runs/events';
import { insertThread } from '../../store/threads/threads';
import { logger, startEngine, type Engine } from '../support/engine';
import { ROOT } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { acquiresDuring } from '../support/pool-acquires';

// Bodies are checked by assertions, not by the compiler.
type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const suffix = () => randomUUID().slice(0, 8);
const unknownRunId = () => `run_${randomUUID().replace(/-/g, '')}`;
/** Generous: the machine running the tests is shared and slow. */
const WAIT_MS = 90_000;

/**
 * A run is its tenant's: to a key of another tenant, every route that reads or acts on one run by
 * its id answers exactly as it does for an id that names no run, from PostgreSQL and from the API's
 * cache of run objects alike, and changes nothing. Decisions and answers record who made them.
 * Tenant A is `default` (API_KEY), tenant B a tenant the operator makes, with a key it issues.
 */
describe('one run by its id: tenant-scoped, and who decided', () => {
  let engine: Engine;
  let app: FastifyInstance;
  /** a second API process on the same database, whose cache of run objects holds nothing of A's runs */
  let second: FastifyInstance;
  /** the first app's connections for reading runs: a GET that costs none was answered from its cache */
  let readsPool: pg.Pool;
  let keyB: string;
  let reviewer: { id: string; key: string };

  const as = (key: string, on?: FastifyInstance) => (options: InjectOptions) =>
    (on ?? app).inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });

  async function issue(payload: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const res = await as(ADMIN_KEY)({ method: 'POST', url: '/v1/keys', payload });
    expect(res.statusCode).toBe(201);
    return res.json();
  }

  beforeAll(async () => {
    engine = await startEngine('embedded', { workerDatabaseUrl: testStack().databases.embedded });
    readsPool = new pg.Pool({ connectionString: testStack().databases.embedded, max: 4 });
    const base = { db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY };
    app = await buildApp({ ...base, reads: readsPool });
    second = await buildApp(base);
    const tenant = await as(ADMIN_KEY)({ method: 'POST', url: '/v1/tenants', payload: { name: `b-${suffix()}` } });
    expect(tenant.statusCode).toBe(201);
    keyB = (await issue({ tenantId: tenant.json().id, name: 'b-all', roles: ['read', 'run', 'decide', 'manage'] })).key;
    reviewer = await issue({ tenantId: 'default', name: 'reviewer', roles: ['read', 'decide'] });
  });
  afterAll(async () => {
    await app?.close();
    await second?.close();
    await readsPool?.end();
    await engine?.close();
  });

  const fixture = (settings: Partial<NewIntegration>) => insertIntegration(engine.db, {
    name: `fx-${suffix()}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT }, ...settings,
  });

  /** A run of tenant A, started with API_KEY. */
  async function startRunOfA(integrationId: string, script: ScriptStep[]): Promise<string> {
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: [integrationId] });
    const thread = await insertThread(engine.db, agent.id);
    const res = await as(API_KEY)({ method: 'POST', url: `/v1/threads/${thread.id}/runs`, payload: { input: 'go' } });
    expect(res.statusCode).toBe(202);
    return res.json().id;
  }

  const readAs = async (key: string, runId: string) => (await as(key)({ method: 'GET', url: `/v1/runs/${runId}` })).json<Json>();

  async function waitingRun<K extends 'pendingApprovals' | 'pendingInputs'>(runId: string, list: K): Promise<Json> {
    let run: Json;
    await waitFor(async () => ((run = await readAs(API_KEY, runId))[list].length > 0), WAIT_MS, `${list} of ${runId}`);
    return run;
  }

  /**
   * B's request on A's run against the same request on an id that names no run: the same status,
   * code and body (each with its own id), a 404.
   */
  async function answersAsUnknown(runId: string, request: (id: string) => InjectOptions, on?: FastifyInstance): Promise<void> {
    const unknown = unknownRunId();
    const shown = (res: { statusCode: number; body: string }, id: string) =>
      ({ status: res.statusCode, body: JSON.parse(res.body.split(id).join('<run>')) as Json });
    const theirs = shown(await as(keyB, on)(request(runId)), runId);
    const none = shown(await as(keyB, on)(request(unknown)), unknown);
    expect(theirs).toEqual(none);
    expect(theirs).toMatchObject({ status: 404, body: { code: 'not_found', detail: 'Run <run> does not exist' } });
  }

  test("B reads, follows, pages, long-polls, cancels and decides A's run as an unknown one; nothing changes; A's reviewer is recorded", async () => {
    const fx = await fixture({ approval: { default: 'always' } });
    const runId = await startRunOfA(fx.id, [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }] }, { text: '{{tool_results}}' }]);
    const before = await waitingRun(runId, 'pendingApprovals');
    expect(before.pendingApprovals).toEqual([expect.objectContaining({ toolCallId: 'call_1_1' })]);

    await answersAsUnknown(runId, (id) => ({ method: 'GET', url: `/v1/runs/${id}` }));
    // A process whose cache has never seen the run: the refusal comes from PostgreSQL.
    await answersAsUnknown(runId, (id) => ({ method: 'GET', url: `/v1/runs/${id}` }), second);
    await answersAsUnknown(runId, (id) => ({ method: 'GET', url: `/v1/runs/${id}?waitMs=500` }), second);
    await answersAsUnknown(runId, (id) => ({ method: 'GET', url: `/v1/runs/${id}/events` }));
    await answersAsUnknown(runId, (id) => ({ method: 'GET', url: `/v1/runs/${id}/messages` }));
    await answersAsUnknown(runId, (id) => ({ method: 'POST', url: `/v1/runs/${id}/cancel` }));
    await answersAsUnknown(runId, (id) => ({ method: 'POST', url: `/v1/runs/${id}/approvals/call_1_1`, payload: { decision: 'deny' } }));
    // B's long poll does not wait on A's run: it answers at once, as for no run.
    const started = Date.now();
    expect((await as(keyB, second)({ method: 'GET', url: `/v1/runs/${runId}?waitMs=20000` })).statusCode).toBe(404);
    expect(Date.now() - started).toBeLessThan(10_000);

    // Nothing changed: A's run still runs and still waits for the same decision, from either process.
    for (const on of [app, second]) {
      const now = (await as(API_KEY, on)({ method: 'GET', url: `/v1/runs/${runId}` })).json<Json>();
      expect(now).toMatchObject({ status: 'running', stopReason: null });
      expect(now.pendingApprovals).toEqual(before.pendingApprovals);
    }
    const { rows: approvals } = await engine.db.query('SELECT status, decided_by_id FROM run_approvals WHERE run_id = $1', [runId]);
    expect(approvals).toEqual([{ status: 'pending', decided_by_id: null }]);
    expect((await listEvents(engine.db, runId)).map((e) => e.type)).not.toContain('approval_resolved');
    // A reads its messages and cancels nothing by reading them.
    expect((await as(API_KEY)({ method: 'GET', url: `/v1/runs/${runId}/messages` })).statusCode).toBe(200);

    // A's reviewer decides: the decision records who.
    const decided = await as(reviewer.key)({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_1`, payload: { decision: 'approve' } });
    expect(decided.statusCode).toBe(200);
    const ended = (await as(API_KEY)({ method: 'GET', url: `/v1/runs/${runId}?waitMs=30000` })).json<Json>();
    expect(ended).toMatchObject({ status: 'completed', output: 'echo: hi' });
    const decidedBy = { principalId: reviewer.id, name: 'reviewer' };
    const { rows } = await engine.db.query('SELECT status, decided_by_id, decided_by_name FROM run_approvals WHERE run_id = $1', [runId]);
    expect(rows).toEqual([{ status: 'approved', decided_by_id: reviewer.id, decided_by_name: 'reviewer' }]);
    const resolved = (await listEvents(engine.db, runId)).find((e) => e.type === 'approval_resolved');
    expect(resolved?.data).toMatchObject({ status: 'approved', decidedBy });
  });

  test('a run object A has read, kept in the cache, is still refused to B, without a read of the database', async () => {
    const fx = await fixture({ approval: { default: 'always' } });
    const runId = await startRunOfA(fx.id, [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'x' } }] }, { text: '{{tool_results}}' }]);
    const run = await waitingRun(runId, 'pendingApprovals');
    const readsDuring = (fn: () => Promise<unknown>) => acquiresDuring(readsPool, fn);
    // A's reads until one is answered from the cache alone.
    await waitFor(async () => (await readsDuring(() => readAs(API_KEY, runId))) === 0, 10_000, "A's run object kept in the cache");

    let refused: Json;
    expect(await readsDuring(async () => {
      refused = await as(keyB)({ method: 'GET', url: `/v1/runs/${runId}` });
    })).toBe(0);
    expect(refused.statusCode).toBe(404);
    await answersAsUnknown(runId, (id) => ({ method: 'GET', url: `/v1/runs/${id}` }));
    // B's refusal took nothing from A: its next read is the cached object, unchanged.
    let again: Json;
    expect(await readsDuring(async () => { again = await readAs(API_KEY, runId); })).toBe(0);
    expect(again).toEqual(run);
    await as(API_KEY)({ method: 'POST', url: `/v1/runs/${runId}/cancel` });
  });

  test("B answers A's question and decides A's sampling request as for an unknown run; A's answer and decision record who", async () => {
    const ask = await fixture({ elicitation: true });
    const askRun = await startRunOfA(ask.id, [{ toolCalls: [{ name: `${ask.name}__ask`, arguments: { message: 'Who?' } }] }, { text: '{{tool_results}}' }]);
    const [input] = (await waitingRun(askRun, 'pendingInputs')).pendingInputs;
    await answersAsUnknown(askRun, (id) => ({ method: 'POST', url: `/v1/runs/${id}/inputs/${input.inputId}`, payload: { action: 'decline' } }));
    expect((await readAs(API_KEY, askRun)).pendingInputs).toEqual([input]);
    expect((await engine.db.query('SELECT status FROM run_inputs WHERE input_id = $1', [input.inputId])).rows).toEqual([{ status: 'pending' }]);

    const answer = await as(API_KEY)({ method: 'POST', url: `/v1/runs/${askRun}/inputs/${input.inputId}`, payload: { action: 'decline' } });
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toMatchObject({ inputId: input.inputId, status: 'decline', decidedBy: { principalId: 'api_key', name: 'API_KEY' } });
    const { rows: inputs } = await engine.db.query('SELECT decided_by_id, decided_by_name FROM run_inputs WHERE input_id = $1', [input.inputId]);
    expect(inputs).toEqual([{ decided_by_id: 'api_key', decided_by_name: 'API_KEY' }]);

    const sampler = await fixture({ sampling: 'approve' });
    const sampleRun = await startRunOfA(sampler.id, [
      { toolCalls: [{ name: `${sampler.name}__sample`, arguments: { topic: 'tides' } }] }, { text: 'ebb' }, { text: '{{tool_results}}' },
    ]);
    const sampling = (await waitingRun(sampleRun, 'pendingApprovals')).pendingApprovals.find((a: Json) => a.kind === 'sampling');
    expect(sampling?.toolCallId).toMatch(/^samp_/);
    await answersAsUnknown(sampleRun, (id) => ({ method: 'POST', url: `/v1/runs/${id}/approvals/${sampling.toolCallId}`, payload: { decision: 'approve' } }));
    expect((await readAs(API_KEY, sampleRun)).pendingApprovals).toEqual([sampling]);

    const decided = await as(reviewer.key)({ method: 'POST', url: `/v1/runs/${sampleRun}/approvals/${sampling.toolCallId}`, payload: { decision: 'approve' } });
    expect(decided.statusCode).toBe(200);
    const { rows } = await engine.db.query('SELECT decided_by_id, decided_by_name FROM run_samplings WHERE sampling_id = $1', [sampling.toolCallId]);
    expect(rows).toEqual([{ decided_by_id: reviewer.id, decided_by_name: 'reviewer' }]);
    const ended = (await as(API_KEY)({ method: 'GET', url: `/v1/runs/${sampleRun}?waitMs=30000` })).json<Json>();
    expect(ended).toMatchObject({ status: 'completed', output: 'sampled (scripted, endTurn): ebb' });
  });
});
