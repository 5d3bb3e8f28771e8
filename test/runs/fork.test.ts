import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import type { Integration } from '../../core/integration';
import type { RunView } from '../../core/run-view';
import { subAgentToolName } from '../../core/sub-agents';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';
import { toolResultText } from '../../core/tool-texts';
import { importCsv } from '../../sources/csv/import-csv';
import { dropThreadRole } from '../../sources/query/thread-role';
import { insertAgent } from '../../store/agents';
import { threadMessages } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { waitFor } from '../support/wait';

/**
 * POST /v1/runs/:id/fork against a real engine, a real MCP server and PostgreSQL; the LLM is
 * scripted. A fork's thread starts with the original's conversation up to the turn, byte for byte,
 * then goes on live with the next step of the script.
 */

const REGIONS = 'region\nnorth\nsouth\neast\n';
const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;

let engine: Engine;
let app: FastifyInstance;
let fx: Integration;

beforeAll(async () => {
  ({ engine, app } = await startApiEngine('embedded', { apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0 }));
  fx = await insertFixtureIntegration(engine.db);
});
afterAll(() => stopApiEngine({ engine, app }));

const as = (key: string) => (options: InjectOptions) =>
  app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
const admin = as(ADMIN_KEY);

const named = (prefix: string) => `${prefix}_${randomUUID().slice(0, 8)}`;
const scripted = (script: ScriptStep[], extra: { integrationIds?: string[]; subAgentIds?: string[] } = {}) =>
  insertAgent(engine.db, { name: named('fork'), model: { provider: 'scripted', script }, ...extra });
const readRun = async (runId: string, waitMs = 30_000) => (await admin({ method: 'GET', url: `/v1/runs/${runId}?waitMs=${waitMs}` })).json<RunView>();

async function startOn(threadId: string, input: string, agentId?: string): Promise<string> {
  const res = await admin({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input, ...(agentId ? { agentId } : {}) } });
  expect(res.statusCode).toBe(202);
  return res.json().id;
}

async function ended(runId: string): Promise<RunView> {
  await engine.result(runId);
  return readRun(runId);
}

const fork = (runId: string, body: Record<string, unknown>, as_ = admin) => as_({ method: 'POST', url: `/v1/runs/${runId}/fork`, payload: body });

async function forked(runId: string, body: Record<string, unknown>): Promise<{ id: string; threadId: string }> {
  const res = await fork(runId, body);
  expect(res.statusCode).toBe(202);
  expect(res.json()).toMatchObject({ id: expect.stringMatching(/^run_/), threadId: expect.stringMatching(/^thr_/), status: 'running' });
  return res.json();
}

/** The stored messages of a thread, as JSON text each: equal texts are the same bytes. */
const storedMessages = async (threadId: string) => (await threadMessages(engine.db, threadId)).map((m) => JSON.stringify(m));

describe('forking a 3-turn run with tool calls', () => {
  const script = (echo: string): ScriptStep[] => [
    { text: 'first', toolCalls: [{ name: echo, arguments: { text: 'one' } }] },
    { text: 'second: {{tool_results}}', toolCalls: [{ name: echo, arguments: { text: 'two' } }] },
    { text: 'third: {{tool_results}}' },
  ];
  let original: RunView;
  let originalMessages: string[];

  beforeAll(async () => {
    const agent = await scripted(script(`${fx.name}__echo`), { integrationIds: [fx.id] });
    const greeter = await scripted([{ text: 'hello there' }]);
    const thread = await admin({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id, metadata: { plan: 'gold' } } });
    const threadId = thread.json().id;
    // A run before the original: its messages are the thread's history the original read.
    await ended(await startOn(threadId, 'hi', greeter.id));
    original = await ended(await startOn(threadId, 'echo twice'));
    originalMessages = await storedMessages(threadId);
  });

  test('the original ran its three turns', () => {
    expect(original).toMatchObject({ status: 'completed', turns: 3, output: 'third: echo: two', forkedFrom: null });
    expect(originalMessages).toHaveLength(8);
  });

  // The thread's 2 messages before the run, the input, then 2 messages a turn before atTurn.
  test.each([
    { atTurn: 1, kept: 3, replies: ['first', 'second: echo: one', 'third: echo: two'] },
    { atTurn: 2, kept: 5, replies: ['second: echo: one', 'third: echo: two'] },
    { atTurn: 3, kept: 7, replies: ['third: echo: two'] },
    { atTurn: 4, kept: 8, replies: ['third: {{tool_results}}'] },
  ])('at turn $atTurn: the original\'s conversation up to it byte for byte, then the script\'s next steps', async ({ atTurn, kept, replies }) => {
    const started = await forked(original.id, { atTurn });
    const run = await ended(started.id);
    expect(run).toMatchObject({
      status: 'completed', threadId: started.threadId, agentId: original.agentId, forkedFrom: { runId: original.id, turn: atTurn },
      turns: replies.length, output: replies.at(-1), parentRunId: null,
    });
    // Its own turns, numbered from atTurn, and only its own calls and usage.
    expect(run.toolCalls.map((c) => [c.id, c.turn])).toEqual([[`call_1_1`, 1], [`call_2_1`, 2]].filter(([, turn]) => Number(turn) >= atTurn));
    if (atTurn === 1) expect(run.usage).toEqual(original.usage);
    else expect(run.usage.inputTokens).toBeLessThan(original.usage.inputTokens);

    const messages = await storedMessages(started.threadId);
    expect(messages.slice(0, kept)).toEqual(originalMessages.slice(0, kept));
    const after = (await threadMessages(engine.db, started.threadId)).slice(kept);
    expect(after.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(replies);

    const thread = (await admin({ method: 'GET', url: `/v1/threads/${started.threadId}` })).json();
    expect(thread).toMatchObject({ agentId: original.agentId, forkedFrom: { runId: original.id, turn: atTurn }, metadata: { plan: 'gold' } });
  });

  test('the original is left as it was', async () => {
    expect(await storedMessages(original.threadId)).toEqual(originalMessages);
    const again = await readRun(original.id);
    expect({ ...again, cost: undefined, costWithChildren: undefined }).toEqual({ ...original, cost: undefined, costWithChildren: undefined });
  });

  test('a replaced tool result is what the LLM reads, and what the fork\'s thread keeps', async () => {
    const started = await forked(original.id, { atTurn: 2, toolResults: [{ toolCallId: 'call_1_1', content: 'REPLACED' }] });
    expect((await ended(started.id)).output).toBe('third: echo: two');
    const messages = await threadMessages(engine.db, started.threadId);
    expect(messages[4]).toEqual({ role: 'tool', toolCallId: 'call_1_1', name: `${fx.name}__echo`, content: 'REPLACED' });
    expect(messages[5]).toMatchObject({ role: 'assistant', content: 'second: REPLACED' });

    const failed = await forked(original.id, { atTurn: 3, toolResults: [{ toolCallId: 'call_2_1', content: 'down', isError: true }] });
    expect((await ended(failed.id)).output).toBe(`third: ${toolResultText.mcpToolFailed('down')}`);

    // A replaced result the model does not repeat is in the fork's thread, not in its workflow's history.
    const marker = `kept-out-of-history-${randomUUID()}`;
    const quiet = await forked(original.id, { atTurn: 3, toolResults: [{ toolCallId: 'call_1_1', content: marker }] });
    expect((await ended(quiet.id)).output).toBe('third: echo: two');
    expect((await threadMessages(engine.db, quiet.threadId))[4]).toMatchObject({ role: 'tool', content: marker });
    const history = await engine.client.workflow.getHandle(quiet.id).fetchHistory();
    expect(JSON.stringify(history)).not.toContain(marker);
    expect(Buffer.from(JSON.stringify(history)).length).toBeLessThan(64 * 1024);
  });

  test('at turn 1 a new input takes the original\'s place; another agent or model runs the fork', async () => {
    const other = await scripted([{ text: 'other agent: {{tool_results}}' }]);
    const withInput = await forked(original.id, { atTurn: 1, input: 'something else', agentId: other.name });
    expect(await ended(withInput.id)).toMatchObject({ agentId: other.id, output: 'other agent: ', turns: 1 });
    expect((await threadMessages(engine.db, withInput.threadId))[2]).toEqual({ role: 'user', content: 'something else' });

    // The step cursor goes on in the fork's model: turn 3 plays its third step.
    const model = { provider: 'scripted', script: [{ text: 'a' }, { text: 'b' }, { text: 'model: {{tool_results}}' }] };
    const withModel = await forked(original.id, { atTurn: 3, model });
    expect(await ended(withModel.id)).toMatchObject({ agentId: original.agentId, output: 'model: echo: two' });
  });

  test('a fork of a fork goes on from its own state', async () => {
    const first = await forked(original.id, { atTurn: 2, toolResults: [{ toolCallId: 'call_1_1', content: 'X' }] });
    await ended(first.id);
    const second = await forked(first.id, { atTurn: 3 });
    expect(await ended(second.id)).toMatchObject({ forkedFrom: { runId: first.id, turn: 3 }, output: 'third: echo: two', turns: 1 });
    expect((await storedMessages(second.threadId)).slice(0, 7)).toEqual((await storedMessages(first.threadId)).slice(0, 7));
    // Forked before its own first turn: the fork's copy of the original's turn 1.
    const third = await forked(first.id, { atTurn: 1 });
    expect(await ended(third.id)).toMatchObject({ output: 'third: echo: two', turns: 3 });
  });

  test('refusals: a turn not reached (409), a result not of an earlier turn, input past turn 1, a result over its bound (400)', async () => {
    for (const atTurn of [0, 5]) {
      const res = await fork(original.id, { atTurn });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ code: 'conflict', field: 'body.atTurn' });
    }
    const later = await fork(original.id, { atTurn: 2, toolResults: [{ toolCallId: 'call_1_1', content: 'ok' }, { toolCallId: 'call_2_1', content: 'no' }] });
    expect(later.statusCode).toBe(400);
    expect(later.json()).toMatchObject({ code: 'validation', field: 'body.toolResults[1].toolCallId' });
    const unknown = await fork(original.id, { atTurn: 3, toolResults: [{ toolCallId: 'nope', content: 'no' }] });
    expect(unknown.json()).toMatchObject({ code: 'validation', field: 'body.toolResults[0].toolCallId' });
    const input = await fork(original.id, { atTurn: 2, input: 'new' });
    expect(input.json()).toMatchObject({ code: 'validation', field: 'body.input' });
    const tooBig = await fork(original.id, { atTurn: 2, toolResults: [{ toolCallId: 'call_1_1', content: 'x'.repeat(1024 * 1024 + 1) }] });
    expect(tooBig.statusCode).toBe(400);
    expect(tooBig.json()).toMatchObject({ code: 'validation', field: 'body.toolResults[0].content' });
    expect((await fork('run_unknown', { atTurn: 1 })).statusCode).toBe(404);
  });

  test('refusals by caller: a model\'s baseUrl is the operator\'s (403), another tenant\'s run is unknown (404), reading is not running (403)', async () => {
    const model = { provider: 'openai', name: 'gpt-test', baseUrl: 'http://127.0.0.1:9/v1' };
    const byKey = await fork(original.id, { atTurn: 2, model }, as(API_KEY));
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json()).toMatchObject({ code: 'admin_required', field: 'body.model.baseUrl' });

    const tenant = (await admin({ method: 'POST', url: '/v1/tenants', payload: { name: named('t') } })).json<{ id: string }>();
    const issue = (roles: string[]) => admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: named('k'), roles } });
    const runner = (await issue(['read', 'run'])).json().key;
    const other = await fork(original.id, { atTurn: 1 }, as(runner));
    expect(other.statusCode).toBe(404);
    expect(other.json().detail).toBe(`Run ${original.id} does not exist`);

    const readerTenantKey = (await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: DEFAULT_TENANT_ID, name: named('r'), roles: ['read'] } })).json().key;
    const reader = await fork(original.id, { atTurn: 1 }, as(readerTenantKey));
    expect(reader.statusCode).toBe(403);
    expect(reader.json()).toMatchObject({ code: 'forbidden', role: 'run' });
  });
});

test('a running run forks from a turn that has ended, and the fork\'s approvals are decided live', async () => {
  const gated = await insertFixtureIntegration(engine.db, { approval: { default: 'always' } });
  const agent = await scripted([
    { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'free' } }] },
    { toolCalls: [{ name: `${gated.name}__echo`, arguments: { text: 'gated' } }] },
    { text: 'done: {{tool_results}}' },
  ], { integrationIds: [fx.id, gated.id] });
  const thread = (await admin({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } })).json();
  const runId = await startOn(thread.id, 'go');
  await waitFor(async () => (await readRun(runId, 0)).pendingApprovals.length > 0, 30_000, 'the original waits for approval');

  const past = await fork(runId, { atTurn: 3 });
  expect(past.statusCode).toBe(409);
  const started = await forked(runId, { atTurn: 2 });
  await waitFor(async () => (await readRun(started.id, 0)).pendingApprovals.length > 0, 30_000, 'the fork waits for approval');
  const decided = await admin({ method: 'POST', url: `/v1/runs/${started.id}/approvals/call_2_1`, payload: { decision: 'approve' } });
  expect(decided.statusCode).toBe(200);
  expect(await ended(started.id)).toMatchObject({ status: 'completed', output: 'done: echo: gated', turns: 2 });
  // The original still waits, untouched.
  expect(await readRun(runId, 0)).toMatchObject({ status: 'running', pendingApprovals: [{ toolCallId: 'call_2_1' }] });
  await admin({ method: 'POST', url: `/v1/runs/${runId}/cancel` });
  expect((await ended(runId)).status).toBe('cancelled');
});

test('a sub-agent\'s run forks as a run of its own', async () => {
  const child = await scripted([
    { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'child' } }] },
    { text: 'child says {{tool_results}}' },
  ], { integrationIds: [fx.id] });
  const parent = await scripted([
    { toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'ask' } }] },
    { text: 'parent heard: {{tool_results}}' },
  ], { subAgentIds: [child.id] });
  const thread = (await admin({ method: 'POST', url: '/v1/threads', payload: { agentId: parent.id } })).json();
  const parentRun = await ended(await startOn(thread.id, 'go'));
  expect(parentRun.output).toBe('parent heard: child says echo: child');
  const childRunId = parentRun.toolCalls[0].childRunId!;

  const started = await forked(childRunId, { atTurn: 2, toolResults: [{ toolCallId: 'call_1_1', content: 'forked' }] });
  expect(await ended(started.id)).toMatchObject({
    agentId: child.id, parentRunId: null, forkedFrom: { runId: childRunId, turn: 2 }, output: 'child says forked', turns: 1,
  });
  expect((await threadMessages(engine.db, started.threadId))[0]).toEqual({ role: 'user', content: 'ask' });
});

describe('a fork\'s data sources', () => {
  const threads: string[] = [];
  afterAll(async () => {
    for (const id of threads) await dropThreadRole(engine.db, id);
  });

  test('the fork\'s thread gets the tables its original\'s had when the turn began, and queries them', async () => {
    const agent = await scripted([
      { toolCalls: [{ name: 'retrieve_mcp_resource', arguments: { integrationId: fx.id, resourceUri: 'fixture://data/plain-table' } }] },
      { toolCalls: [{ name: 'source_query', arguments: { sql: 'SELECT count(*) AS n FROM plain_table' } }] },
      { text: '{{tool_results}}' },
    ], { integrationIds: [fx.id] });
    const thread = (await admin({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } })).json();
    threads.push(thread.id);
    // A table the thread had before the run.
    await importCsv(engine.db, { threadId: thread.id, uri: 'fixture://before/regions.csv', integrationId: null, text: REGIONS, bytes: REGIONS.length });
    const original = await ended(await startOn(thread.id, 'count'));
    expect(original.output).toBe('n\n2\n(1 row)');

    const atTwo = await forked(original.id, { atTurn: 2 });
    threads.push(atTwo.threadId);
    expect(await ended(atTwo.id)).toMatchObject({ status: 'completed', output: 'n\n2\n(1 row)' });
    const sources = (await admin({ method: 'GET', url: `/v1/threads/${atTwo.threadId}/sources` })).json().sources;
    expect(sources.map((s: { uri: string; tableName: string; rowCount: number }) => [s.uri, s.tableName, s.rowCount])).toEqual([
      ['fixture://before/regions.csv', 'regions', 3], ['fixture://data/plain-table', 'plain_table', 2],
    ]);

    // At turn 1 the resource was not imported yet: only the table from before the run is there.
    const asker = await scripted([
      { toolCalls: [{ name: 'source_query', arguments: { sql: 'SELECT count(*) AS n FROM regions' } }, { name: 'source_query', arguments: { sql: 'SELECT 1 FROM plain_table' } }] },
      { text: '{{tool_results}}' },
    ]);
    const atOne = await forked(original.id, { atTurn: 1, agentId: asker.id });
    threads.push(atOne.threadId);
    expect((await ended(atOne.id)).output).toBe(`n\n3\n(1 row)\n${toolResultText.sourceQueryFailed('relation "plain_table" does not exist')}`);
  });
});
