import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import type { PriceTable } from '../../core/pricing';
import type { RunView } from '../../core/run-view';
import { listEvents } from '../../store/runs/events';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { tenantKeys } from '../support/tenant-keys';

/**
 * A money budget that asks (docs/agents.md, Budgets): with limits.onLimit "ask", a reached limit
 * makes the run wait for a person, listed as waiting for "budget"; POST /v1/runs/:id/budget raises
 * it (role manage) and the run goes on, or stops it (role decide); askTimeout stops it too. A run
 * with maxCostUsd on an unpriced model is refused at its start.
 */

const PRICES: PriceTable = { scripted: { scripted: { inputPerMillion: 3, outputPerMillion: 15 } } };
const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const WAIT_MS = 60_000;

let engine: Engine;
let app: FastifyInstance;
const keys = { manager: '', decider: '', reader: '', stranger: '' };

const { as, tenant, issue } = tenantKeys(() => app, ADMIN_KEY);

beforeAll(async () => {
  ({ engine, app } = await startApiEngine('embedded', { apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0, prices: PRICES }, { prices: PRICES }));
  const acme = await tenant('budget');
  keys.manager = await issue(acme, ['read', 'run', 'manage', 'decide']);
  keys.decider = await issue(acme, ['read', 'decide']);
  keys.reader = await issue(acme, ['read']);
  keys.stranger = await issue(await tenant('budget'), ['read', 'run', 'manage', 'decide']);
});
afterAll(() => stopApiEngine({ engine, app }));

/** Turn 1 calls a tool no integration has (its error goes back to the model), turn 2 answers. */
const TWO_TURNS: ScriptStep[] = [{ toolCalls: [{ name: 'no_such_tool', arguments: {} }] }, { text: 'done' }];

async function startRun(agentLimits: Record<string, unknown>, runLimits?: Record<string, unknown>, script = TWO_TURNS): Promise<string> {
  const agent = await as(keys.manager)({
    method: 'POST', url: '/v1/agents',
    payload: { name: `budget_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, limits: agentLimits },
  });
  expect(agent.statusCode).toBe(201);
  const run = await as(keys.manager)({
    method: 'POST', url: '/v1/runs', payload: { agentId: agent.json().id, input: 'go', ...(runLimits ? { limits: runLimits } : {}) },
  });
  expect(run.statusCode).toBe(202);
  return run.json().id;
}

const read = async (runId: string, waitMs = 0) =>
  (await as(keys.manager)({ method: 'GET', url: `/v1/runs/${runId}?waitMs=${waitMs}` })).json<RunView>();

async function waitsForBudget(runId: string): Promise<NonNullable<RunView['pendingBudget']>> {
  await waitFor(async () => (await read(runId)).pendingBudget !== null, WAIT_MS, 'the run to wait for budget');
  return (await read(runId)).pendingBudget!;
}

const answer = (key: string, runId: string, payload: Record<string, unknown>) => as(key)({ method: 'POST', url: `/v1/runs/${runId}/budget`, payload });

async function listedWaiting(runId: string): Promise<boolean> {
  const res = await as(keys.manager)({ method: 'GET', url: '/v1/runs?waiting=true&limit=100' });
  return res.json<{ runs: { id: string }[] }>().runs.some((r) => r.id === runId);
}

test('a reached maxCostUsd waits for a person, is listed as waiting, and goes on once a manager raises it', async () => {
  const runId = await startRun({ maxCostUsd: 0.000001, onLimit: 'ask' });
  const pending = await waitsForBudget(runId);
  expect(pending).toMatchObject({ limitReached: 'maxCostUsd', limits: { maxCostUsd: 0.000001 }, spent: { toolCalls: 1 } });
  expect(pending.spent.costUsd).toBeGreaterThanOrEqual(0.000001);
  expect(pending.spent.inputTokens).toBeGreaterThan(0);
  expect(Date.parse(pending.expiresAt) - Date.parse(pending.requestedAt)).toBe(24 * 3_600_000);
  await waitFor(() => listedWaiting(runId), WAIT_MS, 'the run listed as waiting');
  expect((await read(runId)).status).toBe('running');

  // Who may answer: raising spends money (manage), reading is not enough, another tenant sees no run.
  expect((await answer(keys.reader, runId, { stop: true })).statusCode).toBe(403);
  expect((await answer(keys.decider, runId, { add: { maxCostUsd: 1 } })).statusCode).toBe(403);
  expect((await answer(keys.stranger, runId, { add: { maxCostUsd: 1 } })).statusCode).toBe(404);
  expect((await answer(keys.manager, runId, { add: {} })).statusCode).toBe(400);
  expect((await answer(keys.manager, runId, { add: { maxCostUsd: 1 }, stop: true })).statusCode).toBe(400);

  const raised = await answer(keys.manager, runId, { add: { maxCostUsd: 1 } });
  expect(raised.statusCode).toBe(200);
  expect(raised.json<RunView>().pendingBudget).toBeNull();
  expect(await read(runId, 30_000)).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'done' });
  expect((await answer(keys.manager, runId, { add: { maxCostUsd: 1 } })).statusCode).toBe(409);

  const events = await listEvents(engine.db, runId);
  expect(events.find((e) => e.type === 'budget_requested')?.data).toMatchObject({ limitReached: 'maxCostUsd' });
  expect(events.find((e) => e.type === 'budget_resolved')?.data).toMatchObject({
    status: 'raised', added: { maxCostUsd: 1 }, decidedBy: { name: 'read-run-manage-decide' },
  });
  await waitFor(async () => !(await listedWaiting(runId)), WAIT_MS, 'the run no longer listed as waiting');
  const audit = await engine.db.query('SELECT action, target FROM audit_events WHERE target = $1', [runId]);
  expect(audit.rows).toEqual([{ action: 'POST /v1/runs/:id/budget', target: runId }]);
});

test('{stop: true} from a decider ends the run with stopReason "budget" and the limit it reached', async () => {
  const runId = await startRun({ maxCostUsd: 0.000001, onLimit: 'ask' });
  await waitsForBudget(runId);
  const stopped = await answer(keys.decider, runId, { stop: true });
  expect(stopped.statusCode).toBe(200);
  expect(await read(runId, 30_000)).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxCostUsd', turns: 1 });
  const events = await listEvents(engine.db, runId);
  expect(events.find((e) => e.type === 'budget_resolved')?.data).toMatchObject({ status: 'stopped', added: null });
});

test('a raise that is not enough asks again; askTimeout stops the run when nobody answers', async () => {
  const runId = await startRun({ maxCostUsd: 0.000001, onLimit: 'ask', askTimeout: '3s' });
  const first = await waitsForBudget(runId);
  // Raising another limit than the one reached leaves it reached: the run asks again, with a new request.
  expect((await answer(keys.manager, runId, { add: { maxToolCalls: 5 } })).statusCode).toBe(200);
  await waitFor(async () => {
    const again = (await read(runId)).pendingBudget;
    return again !== null && again.requestedAt !== first.requestedAt;
  }, WAIT_MS, 'a second request');
  expect(await read(runId, 30_000)).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxCostUsd' });
  const statuses = (await listEvents(engine.db, runId)).filter((e) => e.type === 'budget_resolved').map((e) => e.data.status);
  expect(statuses).toEqual(['raised', 'timed_out']);
});

test('maxToolCalls with ask: the calls wait for the raise and are then made', async () => {
  const script: ScriptStep[] = [
    { toolCalls: [{ name: 'no_such_tool', arguments: { n: 1 } }, { name: 'no_such_tool', arguments: { n: 2 } }] }, { text: 'done' },
  ];
  const runId = await startRun({ maxToolCalls: 1, onLimit: 'ask' }, undefined, script);
  const pending = await waitsForBudget(runId);
  expect(pending).toMatchObject({ limitReached: 'maxToolCalls', limits: { maxToolCalls: 1 }, spent: { toolCalls: 0 } });
  expect((await read(runId)).toolCalls).toEqual([]);
  expect((await answer(keys.manager, runId, { add: { maxToolCalls: 1 } })).statusCode).toBe(200);
  const ended = await read(runId, 30_000);
  expect(ended).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'done' });
  expect(ended.toolCalls).toHaveLength(2);
});

test('a run may turn its agent\'s "ask" into "stop", never the reverse', async () => {
  const stopped = await startRun({ maxCostUsd: 0.000001, onLimit: 'ask' }, { onLimit: 'stop' });
  expect(await read(stopped, 30_000)).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxCostUsd', pendingBudget: null });
  const notAsking = await startRun({ maxCostUsd: 0.000001 }, { onLimit: 'ask' });
  expect(await read(notAsking, 30_000)).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxCostUsd' });
  expect((await listEvents(engine.db, notAsking)).some((e) => e.type === 'budget_requested')).toBe(false);
});

test('maxCostUsd on a model the price table does not name is refused at the start, naming limits.maxCostUsd, and records nothing', async () => {
  const agent = await as(keys.manager)({
    method: 'POST', url: '/v1/agents',
    payload: {
      name: `unpriced_${randomUUID().slice(0, 8)}`,
      model: { provider: 'openai', name: 'gpt-unpriced' },
    },
  });
  expect(agent.statusCode).toBe(201);
  const runs = async () => (await engine.db.query('SELECT count(*)::int AS n FROM runs WHERE agent_id = $1', [agent.json().id])).rows[0].n;
  const refused = await as(keys.manager)({
    method: 'POST', url: '/v1/runs', payload: { agentId: agent.json().id, input: 'go', limits: { maxCostUsd: 5 } },
  });
  expect(refused.statusCode).toBe(400);
  expect(refused.json()).toMatchObject({ code: 'validation', field: 'limits.maxCostUsd' });
  expect(refused.json().detail).toContain('openai/gpt-unpriced');
  expect(await runs()).toBe(0);
});
