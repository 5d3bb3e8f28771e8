import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ActivityDeps } from '../../activities/deps';
import { createRecordedResultActivities } from '../../activities/recorded-results';
import type { ScriptStep } from '../../core/agent-model';
import type { Integration } from '../../core/integration';
import type { ChatMessage } from '../../core/messages';
import { notRecordedText } from '../../core/replay';
import { subAgentToolName } from '../../core/sub-agents';
import type { RunView } from '../../core/run-view';
import { toolCallOverBudgetText } from '../../core/tool-texts';
import { importCsv } from '../../sources/csv/import-csv';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertRunOnNewThread } from '../../store/runs/lifecycle';
import { threadMessages } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { ROOT } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/http-mcp-server';

/**
 * POST /v1/runs/:id/replay against a real engine, PostgreSQL and a real MCP server over
 * Streamable HTTP that counts every message it is sent; the LLM is scripted. The original calls an
 * MCP tool (approval-gated, its result past the 2 KB preview), imports a CSV resource and queries
 * it with source_query.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const REGIONS = 'region\nnorth\nsouth\n';
const PROMPTS_SERVER = path.join(ROOT, 'test', 'fixtures', 'mcp-prompts-server.ts');
/** What the server is sent for calls, listings and reads (not the connection's own messages). */
const SERVER_WORK = ['tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list', 'prompts/get'];

let engine: Engine;
let app: FastifyInstance;
let http: HttpMcpServer;
let fx: Integration;

beforeAll(async () => {
  ({ engine, app } = await startApiEngine('embedded', { apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0 }));
  http = await startHttpMcpServer();
  fx = await insertIntegration(engine.db, {
    name: `rp${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: http.url.json }, allowPrivateNetwork: true, approval: { default: 'never', tools: { sized: 'always' } },
  });
});
afterAll(async () => {
  await stopApiEngine({ engine, app });
  await http?.close();
});

const as = (key: string) => (options: InjectOptions) =>
  app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
const admin = as(ADMIN_KEY);
const named = (prefix: string) => `${prefix}_${randomUUID().slice(0, 8)}`;
const scripted = (script: ScriptStep[], extra: Partial<Parameters<typeof insertAgent>[1]> = {}) =>
  insertAgent(engine.db, { name: named('replay'), model: { provider: 'scripted', script }, integrationIds: [fx.id], ...extra });
const readRun = async (runId: string, waitMs = 0) => (await admin({ method: 'GET', url: `/v1/runs/${runId}?waitMs=${waitMs}` })).json<RunView>();
const ended = async (runId: string) => {
  await engine.result(runId);
  return readRun(runId);
};

/** The server's work so far, by method. */
const serverWork = () => Object.fromEntries(SERVER_WORK.map((m) => [m, http.methods.get(m) ?? 0]));
const workSince = (before: Record<string, number>) =>
  Object.fromEntries(Object.entries(serverWork()).map(([m, n]) => [m, n - before[m]]).filter(([, n]) => n !== 0));

/** A worker with no connection to the server and nothing it listed: a run that asks the server anything connects anew. */
async function freshWorker(): Promise<void> {
  await engine.stopWorker();
  await engine.startWorker();
}

/** Approves the run's one call waiting for approval, once it waits. */
async function approveWhenAsked(runId: string): Promise<void> {
  let pending: RunView['pendingApprovals'] = [];
  await waitFor(async () => (pending = (await readRun(runId)).pendingApprovals).length === 1, 60_000, `a call of ${runId} to wait for approval`);
  const res = await admin({ method: 'POST', url: `/v1/runs/${runId}/approvals/${pending[0].toolCallId}`, payload: { decision: 'approve' } });
  expect(res.statusCode).toBe(200);
}

const replay = (runId: string, body: Record<string, unknown>, send = admin) => send({ method: 'POST', url: `/v1/runs/${runId}/replay`, payload: body });

async function replayed(runId: string, body: Record<string, unknown>): Promise<{ id: string; threadId: string }> {
  const res = await replay(runId, body);
  expect(res.statusCode).toBe(202);
  expect(res.json()).toMatchObject({ id: expect.stringMatching(/^run_/), threadId: expect.stringMatching(/^thr_/), status: 'running' });
  return res.json();
}

/** The URIs of a thread's data sources. */
const sourcesOf = async (threadId: string) =>
  ((await admin({ method: 'GET', url: `/v1/threads/${threadId}/sources` })).json().sources as { uri: string }[]).map((d) => d.uri);

/** A tool result of a run as its transcript keeps it: whole. */
const storedResult = async (runId: string, turn: number, slot: number) => (await engine.db.query<{ content: string }>(
  "SELECT message->>'content' AS content FROM run_messages WHERE run_id = $1 AND turn = $2 AND slot = $3", [runId, turn, slot])).rows[0]?.content;

describe('replaying a run with recorded tools', () => {
  const tool = () => `${fx.name}__sized`;
  const script = (): ScriptStep[] => [
    { toolCalls: [
      { name: tool(), arguments: { bytes: 3000 } },
      { name: 'retrieve_mcp_resource', arguments: { integrationId: fx.name, resourceUri: 'fixture://big/3.csv' } },
    ] },
    { toolCalls: [{ name: 'source_query', arguments: { sql: 'SELECT count(*) AS n, sum(amount) AS total FROM "3"' } }] },
    { text: 'done: {{tool_results}}' },
  ];
  let original: RunView;
  let earlier: ChatMessage[];

  beforeAll(async () => {
    const agent = await scripted(script(), { instructions: 'The original instructions.' });
    const greeter = await scripted([{ text: 'hello there' }]);
    const threadId = (await admin({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id, metadata: { plan: 'gold' } } })).json().id;
    // A run before the original: its messages are the thread's history the original read.
    const first = await admin({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'hi', agentId: greeter.id } });
    await ended(first.json().id);
    earlier = await threadMessages(engine.db, threadId);
    // A table the thread had before the original: a replay's thread starts with it too.
    await importCsv(engine.db, { threadId, uri: 'fixture://before/regions.csv', integrationId: null, text: REGIONS, bytes: REGIONS.length });
    const started = await admin({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'size, import, query' } });
    await approveWhenAsked(started.json().id);
    original = await ended(started.json().id);
  });

  test('the original called the tool, imported the CSV and queried it', () => {
    expect(original).toMatchObject({ status: 'completed', turns: 3, replayOf: null });
    expect(original.toolCalls.map((c) => [c.type, c.status])).toEqual([['mcp_tool', 'ok'], ['mcp_resource', 'ok'], ['source_query', 'ok']]);
    expect(original.output).toMatch(/^done: .*4\.5/s);
  });

  test('recorded: the server sees nothing, discovery included; the output is the original\'s and the approval-gated call asks no one', async () => {
    await freshWorker();
    const before = serverWork();
    const hitsBefore = http.hits.get('/json');
    const started = await replayed(original.id, { tools: 'recorded' });
    const run = await ended(started.id);
    expect(run).toMatchObject({
      status: 'completed', threadId: started.threadId, agentId: original.agentId, replayOf: { runId: original.id, tools: 'recorded' },
      output: original.output, turns: 3, pendingApprovals: [],
    });
    expect(run.toolCalls.map((c) => [c.name, c.type, c.status, c.replayed])).toEqual(original.toolCalls.map((c) => [c.name, c.type, c.status, 'recorded']));
    expect(http.hits.get('/json')).toBe(hitsBefore);
    expect(workSince(before)).toEqual({});

    // Matched again (a worker lost the match's marker after the turn's calls were answered), the turn's calls match the same.
    const again = await createRecordedResultActivities({ db: engine.db } as ActivityDeps, []).matchRecordedCalls({
      runId: started.id, turn: 1, originalRunId: original.id, indexes: [0, 1],
    });
    expect(again.recorded).toEqual([{ turn: 1, slot: 1 }, { turn: 1, slot: 2 }]);
    // The recorded result whole, not its preview.
    expect(await storedResult(started.id, 1, 1)).toBe('y'.repeat(3000));
    expect(run.toolCalls[0].resultBytes).toBe(3000);
    // The new thread: the original thread's messages from before the original, then the replay's.
    const messages = await threadMessages(engine.db, started.threadId);
    expect(messages.slice(0, earlier.length)).toEqual(earlier);
    expect(messages[earlier.length]).toEqual({ role: 'user', content: 'size, import, query' });
    const thread = (await admin({ method: 'GET', url: `/v1/threads/${started.threadId}` })).json();
    expect(thread).toMatchObject({ agentId: original.agentId, metadata: { plan: 'gold' } });
    expect(await sourcesOf(started.threadId)).toEqual(['fixture://before/regions.csv']);
  });

  test('recorded, on a changed agent whose call has other arguments: it reads "Not recorded", with the agent\'s instructions', async () => {
    const before = serverWork();
    const changed = await scripted([{ toolCalls: [{ name: tool(), arguments: { bytes: 10 } }] }, { text: '{{tool_results}}' }], {
      instructions: 'The changed instructions.', integrationIds: [],
    });
    const started = await replayed(original.id, { tools: 'recorded', agentId: changed.name });
    const run = await ended(started.id);
    expect(run).toMatchObject({ status: 'completed', agentId: changed.id, output: notRecordedText(tool(), original.id) });
    expect(run.toolCalls).toMatchObject([{ name: tool(), type: 'mcp_tool', status: 'error', replayed: 'not_recorded' }]);
    expect(workSince(before)).toEqual({});
    const { rows: [prefix] } = await engine.db.query<{ data: { messages: ChatMessage[] } }>(
      "SELECT data FROM run_snapshots WHERE run_id = $1 AND kind = 'prefix'", [started.id]);
    expect(prefix.data.messages[0]).toEqual({ role: 'system', content: 'The changed instructions.' });
  });

  test('recorded-then-live: the call the original did not make goes live (and asks for approval, as always): one call reaches the server', async () => {
    const before = serverWork();
    const changed = await scripted([
      { toolCalls: [
        { name: tool(), arguments: { bytes: 3000 } }, { name: tool(), arguments: { bytes: 10 } },
        { name: 'source_query', arguments: { sql: 'SELECT count(*) AS n FROM regions' } },
      ] },
      { text: '{{tool_results}}' },
    ]);
    const started = await replayed(original.id, { tools: 'recorded-then-live', agentId: changed.id });
    await approveWhenAsked(started.id);
    const run = await ended(started.id);
    expect(run).toMatchObject({ status: 'completed', replayOf: { runId: original.id, tools: 'recorded-then-live' } });
    expect(run.output).toBe(`${'y'.repeat(3000)}\n${'y'.repeat(10)}\nn\n2\n(1 row)`);
    expect(run.toolCalls.map((c) => c.replayed)).toEqual(['recorded', undefined, undefined]);
    expect(workSince(before)).toEqual({ 'tools/call': 1 });
  });

  test('live: discovery and every call go live; the CSV is imported to the new thread', async () => {
    await freshWorker();
    const before = serverWork();
    const started = await replayed(original.id, { tools: 'live' });
    await approveWhenAsked(started.id);
    const run = await ended(started.id);
    expect(run).toMatchObject({ status: 'completed', output: original.output, replayOf: { runId: original.id, tools: 'live' } });
    expect(run.toolCalls.map((c) => c.replayed)).toEqual([undefined, undefined, undefined]);
    expect(workSince(before)).toMatchObject({ 'tools/list': 1, 'tools/call': 1, 'resources/read': 1 });
    expect(await sourcesOf(started.threadId)).toEqual(['fixture://before/regions.csv', 'fixture://big/3.csv']);
  });

  test('a budget reached stops the replay without asking, even on an agent that asks', async () => {
    const asking = await scripted(script(), { limits: { maxToolCalls: 1, onLimit: 'ask' } });
    const started = await replayed(original.id, { tools: 'recorded', agentId: asking.id });
    const run = await ended(started.id);
    expect(run).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxToolCalls', pendingBudget: null });
    expect(run.toolCalls.map((c) => [c.replayed, c.result])).toEqual([['recorded', 'y'.repeat(2048)], [undefined, toolCallOverBudgetText(1)]]);
  });

  test('a model with its own endpoint is the operator\'s to give; a run without a recorded preparation cannot be replayed', async () => {
    const model = { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'http://127.0.0.1:9/v1' };
    const refused = await replay(original.id, { tools: 'recorded', model }, as(API_KEY));
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'admin_required', detail: expect.stringContaining('body.model.baseUrl') });
    expect((await replay(original.id, { tools: 'sometimes' })).statusCode).toBe(400);
    expect((await replay(original.id, {})).statusCode).toBe(400);

    const agent = await scripted([{ text: 'never' }]);
    const { run } = await insertRunOnNewThread(engine.db, { runId: `run_${randomUUID()}`, threadId: `thr_${randomUUID()}`, agentRef: agent.id, input: 'x' });
    expect((await replay(run!.id, { tools: 'recorded' })).json()).toMatchObject({ status: 409, code: 'conflict' });
  });

  test('another tenant\'s run answers as an unknown one; a caller without the run role may not replay', async () => {
    const tenant = (await admin({ method: 'POST', url: '/v1/tenants', payload: { name: named('t').toLowerCase() } })).json();
    const theirs = await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: 'other', roles: ['read', 'run'] } });
    const other = as(theirs.json().key);
    const unknown = `run_${randomUUID()}`;
    const [foreign, none] = [await replay(original.id, { tools: 'recorded' }, other), await replay(unknown, { tools: 'recorded' }, other)];
    expect(foreign.statusCode).toBe(404);
    expect(foreign.body.replaceAll(original.id, 'ID')).toBe(none.body.replaceAll(unknown, 'ID'));

    const reader = await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: 'ten_default', name: 'reader', roles: ['read'] } });
    expect((await replay(original.id, { tools: 'recorded' }, as(reader.json().key))).statusCode).toBe(403);
  });
});

describe('replaying a run that asked a sub-agent, with a server\'s conventional prompts in its prefix', () => {
  let countFile: string;
  let original: RunView;
  let helperRuns: () => Promise<number>;

  beforeAll(async () => {
    countFile = path.join(testStack().tmpDir, `replay-prompts-${randomUUID()}`);
    const prompts = await insertIntegration(engine.db, {
      name: named('prompts'),
      transport: {
        type: 'stdio', command: process.execPath, args: ['--import', 'tsx', PROMPTS_SERVER], cwd: ROOT,
        env: { PROMPTS_MODE: 'system', PROMPT_LABEL: 'the file server', COUNT_FILE: countFile },
      },
    });
    const helper = await insertAgent(engine.db, { name: named('helper'), model: { provider: 'scripted', script: [{ text: 'helped' }] } });
    helperRuns = async () => Number((await engine.db.query('SELECT count(*) FROM runs WHERE agent_id = $1', [helper.id])).rows[0].count);
    const agent = await insertAgent(engine.db, {
      name: named('asks'), instructions: 'Ask for help.', integrationIds: [prompts.id], subAgentIds: [helper.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: subAgentToolName(helper.name), arguments: { input: 'help' } }] }, { text: 'got: {{tool_results}}' }] },
    });
    const threadId = (await admin({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } })).json().id;
    original = await ended((await admin({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'go' } })).json().id);
  });

  test('the sub-agent\'s recorded answer is taken without a run of it; the prefix keeps the server\'s prompt, with the new instructions', async () => {
    expect(original).toMatchObject({ status: 'completed', output: 'got: helped' });
    expect(original.toolCalls[0].childRunId).toEqual(expect.stringMatching(/^run_/));
    await freshWorker();
    const [gets, runs] = [fs.readFileSync(countFile, 'utf8'), await helperRuns()];
    const changed = await scripted([{ toolCalls: [{ name: original.toolCalls[0].name, arguments: { input: 'help' } }] }, { text: 'now: {{tool_results}}' }], {
      instructions: 'Ask politely.',
    });
    const run = await ended((await replayed(original.id, { tools: 'recorded', agentId: changed.id })).id);
    expect(run).toMatchObject({ status: 'completed', output: 'now: helped' });
    expect(run.toolCalls).toEqual([expect.objectContaining({ type: 'sub_agent', status: 'ok', replayed: 'recorded' })]);
    expect(run.toolCalls[0].childRunId).toBeUndefined();
    expect(await helperRuns()).toBe(runs);
    expect(fs.readFileSync(countFile, 'utf8')).toBe(gets);

    const prefixOf = async (runId: string) => (await engine.db.query<{ data: { messages: ChatMessage[] } }>(
      "SELECT data FROM run_snapshots WHERE run_id = $1 AND kind = 'prefix'", [runId])).rows[0].data.messages;
    const [before, after] = [await prefixOf(original.id), await prefixOf(run.id)];
    expect(before[0].content).toMatch(/^\[System instructions from Server: .+\]\nInstructions of the file server\.\n\n---\n\n\[Thread System Prompt\]\nAsk for help\.$/);
    expect(after).toEqual([{ role: 'system', content: before[0].content.replace('Ask for help.', 'Ask politely.') }, ...before.slice(1)]);
  });
});

describe('replaying a run whose caller ran one of its tools', () => {
  const WEATHER = { name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
  const script = (city: string): ScriptStep[] => [{ toolCalls: [{ name: 'get_weather', arguments: { city } }] }, { text: 'weather: {{tool_results}}' }];
  const answer = async (runId: string, content: string) => {
    let pending: RunView['pendingCallerTools'] = [];
    await waitFor(async () => (pending = (await readRun(runId)).pendingCallerTools).length === 1, 60_000, `a caller tool call of ${runId}`);
    const res = await admin({ method: 'POST', url: `/v1/runs/${runId}/tool-results/${pending[0].toolCallId}`, payload: { content } });
    expect(res.statusCode).toBe(202);
  };
  let original: RunView;

  beforeAll(async () => {
    const agent = await scripted(script('Paris'), { integrationIds: [] });
    const started = await admin({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.id, input: 'weather?', callerTools: [WEATHER] } });
    await answer(started.json().id, 'sunny');
    original = await ended(started.json().id);
  });

  test('recorded: the caller\'s recorded answer, without asking it; recorded-then-live: another call waits for the replay\'s caller', async () => {
    expect(original).toMatchObject({ status: 'completed', output: 'weather: sunny' });
    const recorded = await ended((await replayed(original.id, { tools: 'recorded' })).id);
    expect(recorded).toMatchObject({ status: 'completed', output: 'weather: sunny', pendingCallerTools: [] });
    expect(recorded.toolCalls).toMatchObject([{ type: 'caller_tool', status: 'ok', replayed: 'recorded' }]);

    const changed = await scripted(script('Oslo'), { integrationIds: [] });
    const notRecorded = await ended((await replayed(original.id, { tools: 'recorded', agentId: changed.id })).id);
    expect(notRecorded.output).toBe(`weather: ${notRecordedText('get_weather', original.id)}`);

    const live = await replayed(original.id, { tools: 'recorded-then-live', agentId: changed.id });
    await answer(live.id, 'snow');
    expect(await ended(live.id)).toMatchObject({ status: 'completed', output: 'weather: snow' });
  });
});
