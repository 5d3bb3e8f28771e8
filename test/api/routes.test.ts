import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import { createPool } from '../../store/pool';
import { toolResultText } from '../../core/tool-texts';
import { logger, type Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';

const AGENT_KEYS = ['id', 'name', 'description', 'instructions', 'model', 'integrationIds', 'promptOrder', 'promptWhen', 'maxTurns', 'maxToolResultBytes', 'mcpTasks', 'limits', 'subAgents', 'callerTools', 'sourceFile', 'disabledAt', 'createdAt', 'updatedAt'];
const RUN_KEYS = ['id', 'threadId', 'agentId', 'parentRunId', 'parentToolCallId', 'forkedFrom', 'replayOf', 'evalId', 'startedBy', 'version', 'status', 'stopReason', 'limitReached', 'output', 'error', 'turns', 'usage', 'prefix', 'usageWithChildren', 'cost', 'costWithChildren', 'toolCalls', 'pendingApprovals', 'pendingInputs', 'pendingBudget', 'pendingCallerTools', 'createdAt', 'endedAt'];
const SLOW: ScriptStep[] = [{ text: 'too late', delayMs: 20_000 }];

let engine: Engine;
let app: FastifyInstance;

beforeAll(async () => {
  ({ engine, app } = await startApiEngine());
});
afterAll(() => stopApiEngine({ engine, app }));

// Response bodies are checked by assertions, not by the compiler.
const json = (res: LightMyRequestResponse) => res.json();
const inject = (options: InjectOptions) => app.inject(options);

async function createAgent(script: ScriptStep[], extra: Record<string, unknown> = {}) {
  const res = await inject({
    method: 'POST', url: '/v1/agents',
    payload: { name: `agent_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, ...extra },
  });
  expect(res.statusCode).toBe(201);
  return json(res);
}

async function createThread(script: ScriptStep[]): Promise<string> {
  const agent = await createAgent(script);
  const res = await inject({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } });
  expect(res.statusCode).toBe(201);
  return json(res).id as string;
}

const postRun = (threadId: string, payload: Record<string, unknown>, idempotencyKey?: string) => inject({
  method: 'POST', url: `/v1/threads/${threadId}/runs`, payload,
  headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
});

async function startRun(threadId: string, input = 'go'): Promise<string> {
  const res = await postRun(threadId, { input });
  expect(res.statusCode).toBe(202);
  return json(res).id as string;
}

async function getRun(runId: string, waitMs?: number) {
  const startedAt = Date.now();
  const res = await inject({ method: 'GET', url: `/v1/runs/${runId}${waitMs === undefined ? '' : `?waitMs=${waitMs}`}` });
  return { res, body: json(res), elapsedMs: Date.now() - startedAt };
}

function expectProblem(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = json(res);
  expect(body).toMatchObject({ type: expect.any(String), title: expect.any(String), status, detail: expect.any(String) });
  return body;
}

describe('agents and threads', () => {
  test('POST /v1/agents answers 201 with the contract shape, and GET reads and lists the agent', async () => {
    const model = { provider: 'scripted', script: [{ text: 'hi' }] };
    const agent = await createAgent(model.script, { instructions: 'Be brief.', description: 'greets', maxTurns: 7 });
    expect(Object.keys(agent).sort()).toEqual([...AGENT_KEYS].sort());
    expect(agent).toMatchObject({ id: expect.stringMatching(/^agt_/), instructions: 'Be brief.', description: 'greets', model, integrationIds: [], maxTurns: 7, mcpTasks: true });
    expect(new Date(agent.createdAt).toISOString()).toBe(agent.createdAt);

    const read = await inject({ method: 'GET', url: `/v1/agents/${agent.id}` });
    expect(read.statusCode).toBe(200);
    expect(json(read)).toEqual(agent);
    const list = json(await inject({ method: 'GET', url: '/v1/agents' }));
    expect(list.agents).toContainEqual(agent);
  });

  test('an agent name that is taken answers 409 problem+json', async () => {
    const agent = await createAgent([{ text: 'hi' }]);
    const res = await inject({ method: 'POST', url: '/v1/agents', payload: { name: agent.name, model: agent.model } });
    expect(expectProblem(res, 409)).toMatchObject({ code: 'conflict', detail: expect.stringContaining(agent.name) });
  });

  test('POST /v1/threads answers 201 with {id, agentId, createdAt}, and GET reads it with its (zero) cost', async () => {
    const agent = await createAgent([{ text: 'hi' }]);
    const res = await inject({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } });
    expect(res.statusCode).toBe(201);
    const thread = json(res);
    expect(thread).toEqual({ id: expect.stringMatching(/^thr_/), agentId: agent.id, metadata: {}, forkedFrom: null, createdAt: expect.any(String) });
    const nothing = { usd: 0, priced: true };
    expect(json(await inject({ method: 'GET', url: `/v1/threads/${thread.id}` }))).toEqual({ ...thread, cost: nothing, costWithChildren: nothing });
  });
});

describe('bad input', () => {
  const scripted = { provider: 'scripted', script: [{ text: 'hi' }] };
  test.each<[string, InjectOptions]>([
    ['a name that does not start with a letter', { method: 'POST', url: '/v1/agents', payload: { name: '1abc', model: scripted } }],
    ['a name longer than 64 characters', { method: 'POST', url: '/v1/agents', payload: { name: `a${'b'.repeat(64)}`, model: scripted } }],
    ['maxTurns above 1000', { method: 'POST', url: '/v1/agents', payload: { name: 'ok', model: scripted, maxTurns: 1001 } }],
    ['maxTurns of 0', { method: 'POST', url: '/v1/agents', payload: { name: 'ok', model: scripted, maxTurns: 0 } }],
    ['an unknown model provider', { method: 'POST', url: '/v1/agents', payload: { name: 'ok', model: { provider: 'nope' } } }],
    ['a malformed script step', { method: 'POST', url: '/v1/agents', payload: { name: 'ok', model: { provider: 'scripted', script: [{ txt: 'x' }] } } }],
    ['an unknown field', { method: 'POST', url: '/v1/agents', payload: { name: 'ok', model: scripted, maxturns: 3 } }],
    ['a missing body', { method: 'POST', url: '/v1/agents' }],
    ['malformed JSON', { method: 'POST', url: '/v1/agents', payload: '{"name": "ok",', headers: { 'content-type': 'application/json' } }],
    ['a thread without agentId', { method: 'POST', url: '/v1/threads', payload: {} }],
    ['an empty run input', { method: 'POST', url: '/v1/threads/thr_x/runs', payload: { input: '' } }],
    ['a run input that is not a string', { method: 'POST', url: '/v1/threads/thr_x/runs', payload: { input: { text: 'hi' } } }],
    ['an Idempotency-Key longer than 255 characters', { method: 'POST', url: '/v1/threads/thr_x/runs', payload: { input: 'hi' }, headers: { 'idempotency-key': 'k'.repeat(256) } }],
    ['waitMs above 30000', { method: 'GET', url: '/v1/runs/run_x?waitMs=30001' }],
    ['waitMs that is not a number', { method: 'GET', url: '/v1/runs/run_x?waitMs=soon' }],
  ])('%s answers 400 problem+json', async (_case, options) => {
    const body = expectProblem(await inject(options), 400);
    expect(body.detail).not.toBe('');
  });

  test('the 400 for a bad model names the offending field', async () => {
    const res = await inject({ method: 'POST', url: '/v1/agents', payload: { name: 'ok', model: { provider: 'scripted', script: [{ text: 5 }] } } });
    expect(expectProblem(res, 400).detail).toMatch(/model\.script\[0\]\.text/);
  });

  test('a value of the wrong JSON type is refused, not converted: 400 naming the field', async () => {
    const name = `typed_${randomUUID().slice(0, 8)}`;
    const res = await inject({ method: 'POST', url: '/v1/agents', payload: { name, model: scripted, maxTurns: '5' } });
    expect(expectProblem(res, 400)).toMatchObject({ code: 'validation', field: 'body.maxTurns', detail: expect.stringContaining('body.maxTurns') });
    expect((await inject({ method: 'GET', url: `/v1/agents/${name}` })).statusCode).toBe(404);
  });
});

describe('unknown things answer 404 problem+json', () => {
  test.each<[string, InjectOptions]>([
    ['a run', { method: 'GET', url: '/v1/runs/run_doesnotexist' }],
    ['a run to cancel', { method: 'POST', url: '/v1/runs/run_doesnotexist/cancel' }],
    ['an agent', { method: 'GET', url: '/v1/agents/agt_doesnotexist' }],
    ['a thread', { method: 'GET', url: '/v1/threads/thr_doesnotexist' }],
    ['the agent of a new thread', { method: 'POST', url: '/v1/threads', payload: { agentId: 'agt_doesnotexist' } }],
    ['the thread of a new run', { method: 'POST', url: '/v1/threads/thr_doesnotexist/runs', payload: { input: 'hi' } }],
    ['a route', { method: 'GET', url: '/v1/nothing-here' }],
  ])('%s', async (_case, options) => {
    expectProblem(await inject(options), 404);
  });
});

describe('runs', () => {
  test('a run answers 202, and GET ?waitMs returns the finished run as soon as it ends', async () => {
    const threadId = await createThread([
      { toolCalls: [{ name: 'lookup_weather', arguments: { city: 'Lyon' } }] },
      { text: 'Done: {{tool_results}}' },
    ]);
    const res = await postRun(threadId, { input: 'What is the weather?' });
    expect(res.statusCode).toBe(202);
    const accepted = json(res);
    expect(accepted).toEqual({ id: expect.stringMatching(/^run_/), threadId, status: 'running' });

    const { res: read, body: run, elapsedMs } = await getRun(accepted.id, 30_000);
    expect(read.statusCode).toBe(200);
    expect(elapsedMs).toBeLessThan(15_000);
    expect(Object.keys(run).sort()).toEqual([...RUN_KEYS].sort());
    const unknownTool = toolResultText.unknownTool('lookup_weather');
    expect(run).toMatchObject({
      id: accepted.id, threadId, status: 'completed', stopReason: 'answer', output: `Done: ${unknownTool}`, error: null, turns: 2, version: null, replayOf: null,
      endedAt: expect.any(String), createdAt: expect.any(String),
    });
    expect(run.usage.inputTokens).toBeGreaterThan(0);
    expect(run.usage.outputTokens).toBeGreaterThanOrEqual(0);
    expect(run.toolCalls).toEqual([{
      id: expect.any(String), turn: 1, name: 'lookup_weather', type: 'unknown', status: 'error',
      durationMs: expect.any(Number), result: unknownTool, resultBytes: Buffer.byteLength(unknownTool),
      arguments: '{"city": "Lyon"}', argumentsBytes: 16,
    }]);
  });

  test('agentId runs one turn of the thread with another agent', async () => {
    const threadId = await createThread([{ text: 'from the first agent' }]);
    const other = await createAgent([{ text: 'from the other agent' }]);
    const res = await postRun(threadId, { input: 'hi', agentId: other.id });
    expect(res.statusCode).toBe(202);
    const { body: run } = await getRun(json(res).id, 30_000);
    expect(run).toMatchObject({ agentId: other.id, status: 'completed', output: 'from the other agent' });
  });

  test('agentId may name the agent; an unknown thread or agent answers 404 and claims nothing', async () => {
    const threadId = await createThread([{ text: 'from the first agent' }]);
    const other = await createAgent([{ text: 'by name' }]);
    expectProblem(await postRun('thr_missing', { input: 'hi' }), 404);
    expect(expectProblem(await postRun(threadId, { input: 'hi', agentId: 'no-such-agent' }), 404).detail).toContain('no-such-agent');
    const { rows } = await engine.db.query<{ active_run_id: string | null }>('SELECT active_run_id FROM threads WHERE id = $1', [threadId]);
    expect(rows[0].active_run_id).toBeNull();
    const res = await postRun(threadId, { input: 'hi', agentId: other.name });
    expect(res.statusCode).toBe(202);
    expect((await getRun(json(res).id, 30_000)).body).toMatchObject({ agentId: other.id, status: 'completed', output: 'by name' });
  });

  test('GET ?waitMs answers after about waitMs with status running when the run is slow', async () => {
    const runId = await startRun(await createThread(SLOW));
    const { res, body: run, elapsedMs } = await getRun(runId, 1_500);
    expect(res.statusCode).toBe(200);
    expect(run).toMatchObject({ id: runId, status: 'running', stopReason: null, output: null, endedAt: null });
    expect(elapsedMs).toBeGreaterThanOrEqual(1_400);
    expect(elapsedMs).toBeLessThan(10_000);

    const cancel = await inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` });
    expect(cancel.statusCode).toBe(202);
    expect((await getRun(runId, 30_000)).body).toMatchObject({ status: 'cancelled', stopReason: 'cancelled' });
  });

  test('a thread runs one run at a time: a second run answers 409 until the first is cancelled', async () => {
    const threadId = await createThread(SLOW);
    const first = await startRun(threadId);
    const busy = await postRun(threadId, { input: 'me too' });
    expect(expectProblem(busy, 409)).toMatchObject({ code: 'thread_busy' });

    const cancel = await inject({ method: 'POST', url: `/v1/runs/${first}/cancel` });
    expect(cancel.statusCode).toBe(202);
    expect(json(cancel)).toEqual({ id: first, status: expect.stringMatching(/^(running|cancelled)$/) });
    const { body: run, elapsedMs } = await getRun(first, 30_000);
    expect(run).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', endedAt: expect.any(String) });
    expect(elapsedMs).toBeLessThan(15_000);
  });

  test('a run input may hold 1,000,000 characters, and not one more', async () => {
    const threadId = await createThread([{ text: 'read it all' }]);
    expectProblem(await postRun(threadId, { input: 'é'.repeat(1_000_001) }), 400);
    const runId = await startRun(threadId, 'é'.repeat(1_000_000));
    expect((await getRun(runId, 30_000)).body).toMatchObject({ status: 'completed', output: 'read it all' });
  });

  test('cancelling a run that has ended answers 202 with its final status', async () => {
    const runId = await startRun(await createThread([{ text: 'quick' }]));
    expect((await getRun(runId, 30_000)).body.status).toBe('completed');
    // A JSON content type without a body is what many clients send for a bodiless POST.
    const res = await inject({ method: 'POST', url: `/v1/runs/${runId}/cancel`, headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(202);
    expect(json(res)).toEqual({ id: runId, status: 'completed' });
  });

  test('the same Idempotency-Key gives the same run; with another body it answers 409', async () => {
    const threadId = await createThread([{ text: 'once' }]);
    const key = `key-${randomUUID()}`;
    const first = await postRun(threadId, { input: 'hello' }, key);
    expect(first.statusCode).toBe(202);
    const runId = json(first).id;
    expect((await getRun(runId, 30_000)).body.status).toBe('completed');

    const replay = await postRun(threadId, { input: 'hello' }, key);
    expect(replay.statusCode).toBe(202);
    expect(json(replay)).toEqual({ id: runId, threadId, status: 'completed' });
    const { rows } = await engine.db.query<{ n: string }>('SELECT count(*) AS n FROM runs WHERE thread_id = $1', [threadId]);
    expect(Number(rows[0].n)).toBe(1);

    const conflict = await postRun(threadId, { input: 'something else' }, key);
    expect(expectProblem(conflict, 409)).toMatchObject({ code: 'conflict' });
  });

  test('concurrent requests with the same Idempotency-Key all get the one run, which completes', async () => {
    const threadId = await createThread([{ text: 'only once' }]);
    const key = `key-${randomUUID()}`;
    const responses = await Promise.all([1, 2, 3, 4].map(() => postRun(threadId, { input: 'same' }, key)));
    expect(responses.map((r) => r.statusCode)).toEqual([202, 202, 202, 202]);
    const ids = new Set(responses.map((r) => json(r).id));
    expect(ids.size).toBe(1);
    const [runId] = [...ids];
    expect((await getRun(runId, 30_000)).body).toMatchObject({ status: 'completed', output: 'only once' });
    const { rows } = await engine.db.query<{ n: string }>('SELECT count(*) AS n FROM runs WHERE thread_id = $1', [threadId]);
    expect(Number(rows[0].n)).toBe(1);
  });
});

describe('one-shot runs: POST /v1/runs', () => {
  const postOneShot = (payload: Record<string, unknown>, idempotencyKey?: string) => inject({
    method: 'POST', url: '/v1/runs', payload, headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
  });
  const threadCount = async (agentId: string) => Number((await engine.db.query<{ n: string }>('SELECT count(*) AS n FROM threads WHERE agent_id = $1', [agentId])).rows[0].n);

  test('starts a run on a new thread of the agent, named by id or by name; the thread goes on like any other', async () => {
    const agent = await createAgent([{ text: 'first' }, { text: 'second' }]);
    const byName = await postOneShot({ agentId: agent.name, input: 'go' });
    expect(byName.statusCode).toBe(202);
    const { id: runId, threadId, status } = json(byName);
    expect(status).toBe('running');
    expect(threadId).toMatch(/^thr_/);
    expect((await getRun(runId, 30_000)).body).toMatchObject({ id: runId, threadId, agentId: agent.id, status: 'completed', output: 'first' });
    expect(json(await inject({ method: 'GET', url: `/v1/threads/${threadId}` }))).toMatchObject({ id: threadId, agentId: agent.id });

    // The thread is an ordinary one: the next run continues it, with its history.
    const next = await startRun(threadId, 'again');
    expect((await getRun(next, 30_000)).body).toMatchObject({ threadId, status: 'completed' });
    const byId = await postOneShot({ agentId: agent.id, input: 'go' });
    expect(json(byId).threadId).not.toBe(threadId);
    expect(await threadCount(agent.id)).toBe(2);
  });

  test('an unknown agent answers 404 and a deleted one 409, and neither leaves a thread behind', async () => {
    expect(expectProblem(await postOneShot({ agentId: `agt_${randomUUID().replace(/-/g, '')}`, input: 'go' }), 404)).toMatchObject({ code: 'not_found' });
    // An agent that a thread refers to is kept when deleted, disabled.
    const agent = await createAgent([{ text: 'never' }]);
    expect((await inject({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } })).statusCode).toBe(201);
    expect((await inject({ method: 'DELETE', url: `/v1/agents/${agent.id}` })).statusCode).toBe(200);
    expect(expectProblem(await postOneShot({ agentId: agent.id, input: 'go' }), 409)).toMatchObject({ code: 'agent_disabled', detail: expect.stringMatching(/deleted/) });
    expect(expectProblem(await postOneShot({ agentId: agent.id, input: 'go' }, `key-${randomUUID()}`), 409)).toMatchObject({ code: 'agent_disabled' });
    expect(await threadCount(agent.id)).toBe(1);
    expectProblem(await postOneShot({ input: 'no agent' }), 400);
  });

  test('the same Idempotency-Key gives the same thread and run; with another body it answers 409', async () => {
    const agent = await createAgent([{ text: 'once' }]);
    const key = `key-${randomUUID()}`;
    const responses = await Promise.all([1, 2, 3].map(() => postOneShot({ agentId: agent.id, input: 'same' }, key)));
    expect(responses.map((r) => r.statusCode)).toEqual([202, 202, 202]);
    expect(new Set(responses.map((r) => `${json(r).id} ${json(r).threadId}`)).size).toBe(1);
    const { id: runId, threadId } = json(responses[0]);
    expect((await getRun(runId, 30_000)).body).toMatchObject({ status: 'completed', output: 'once' });

    expect(json(await postOneShot({ agentId: agent.name, input: 'same' }, key))).toEqual({ id: runId, threadId, status: 'completed' });
    expect(expectProblem(await postOneShot({ agentId: agent.id, input: 'another' }, key), 409)).toMatchObject({ code: 'conflict' });
    expect(await threadCount(agent.id)).toBe(1);
  });
});

describe('operations', () => {
  test('/healthz and /readyz answer 200 when PostgreSQL and Temporal answer and the namespace has the search attributes', async () => {
    expect(json(await inject({ method: 'GET', url: '/healthz' }))).toEqual({ status: 'ok' });
    const ready = await inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(json(ready)).toEqual({ status: 'ok', checks: { database: 'ok', temporal: 'ok', workers: 'ok', searchAttributes: 'ok' } });
  });

  test('without its database, /readyz answers 503 naming it, and other routes a 503 that hides its cause', async () => {
    const deadDb = createPool('postgres://postgres@127.0.0.1:1/none', logger, 1);
    const unready = await buildApp({ db: deadDb, client: engine.client, taskQueue: engine.taskQueue, logger });
    try {
      const body = expectProblem(await unready.inject({ method: 'GET', url: '/readyz' }), 503);
      expect(body.detail).toMatch(/database/);
      expect(body.detail).not.toMatch(/temporal/);
      expect(body.checks).toEqual({ database: 'unreachable', temporal: 'ok', workers: 'ok', searchAttributes: 'ok' });

      const failed = await unready.inject({ method: 'GET', url: '/v1/agents' });
      expect(expectProblem(failed, 503).detail).toBe('The database is unreachable; try again shortly');
      expect(failed.headers['retry-after']).toBe('5');
      expect(failed.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
    } finally {
      await unready.close();
      await deadDb.end();
    }
  });

  test('/docs/json is an OpenAPI document with the run routes', async () => {
    const res = await inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const doc = json(res);
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.paths['/v1/runs/{id}']).toHaveProperty('get');
    expect(doc.paths['/v1/threads/{threadId}/runs']).toHaveProperty('post');
    expect(doc.paths['/v1/runs']).toHaveProperty('post');
    expect(doc.components.schemas).toHaveProperty('Run');
    expect((await inject({ method: 'GET', url: '/docs' })).statusCode).toBeLessThan(400);
  });

  test('with an API key, /v1 requires it as a bearer token while health and docs stay open', async () => {
    const apiKey = `key-${randomUUID()}`;
    const secured = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, apiKey });
    try {
      const call = (authorization?: string, url = '/v1/agents') =>
        secured.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} });
      expectProblem(await call(), 401);
      expectProblem(await call(`Bearer ${apiKey}x`), 401);
      expectProblem(await call(apiKey), 401);
      expectProblem(await call(undefined, '/v1/nothing-here'), 401);
      expect((await call(`Bearer ${apiKey}`)).statusCode).toBe(200);
      expect((await call(`bearer ${apiKey}`)).statusCode).toBe(200);
      expect((await secured.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      expect((await secured.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      const docs = await secured.inject({ method: 'GET', url: '/docs/json' });
      expect(docs.statusCode).toBe(200);
      expect(json(docs).security).toEqual([{ bearerAuth: [] }]);
    } finally {
      await secured.close();
    }
  });
});
