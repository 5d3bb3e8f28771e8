import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { FastifyInstance } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import type { RunView } from '../../core/run-view';
import { listEvents } from '../../store/runs/events';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { followSseText, sseEventsOf } from '../support/sse-text';
import { waitFor } from '../support/wait';
import { tenantKeys } from '../support/tenant-keys';

/**
 * Caller tools (docs/agents.md, Caller tools): a run declares tools its caller runs; the LLM calls
 * them by their names; each call is stored and the run waits, durably, for the caller's answer
 * (POST /v1/runs/:id/tool-results/:toolCallId), listed as waiting for "caller_tool".
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const WAIT_MS = 60_000;

let engine: Engine;
let app: FastifyInstance;
let baseUrl: string;
const keys = { runner: '', reader: '', stranger: '' };
let acme: string;

const { as, tenant, issue } = tenantKeys(() => app, ADMIN_KEY);

beforeAll(async () => {
  ({ engine, app } = await startApiEngine('embedded', { apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0 }));
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  acme = await tenant('callers');
  keys.runner = await issue(acme, ['read', 'run', 'manage', 'decide']);
  keys.reader = await issue(acme, ['read']);
  keys.stranger = await issue(await tenant('callers'), ['read', 'run', 'manage', 'decide']);
});
afterAll(() => stopApiEngine({ engine, app }));

const WEATHER = {
  name: 'get_weather', description: 'The weather in a city, as the caller knows it',
  inputSchema: { type: 'object', properties: { city: { type: 'string', minLength: 1 } }, required: ['city'], additionalProperties: false },
};
const TIME = { name: 'get_time', inputSchema: { type: 'object', properties: { zone: { type: 'string' } } } };

async function agent(script: ScriptStep[], extra: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const res = await as(keys.runner)({
    method: 'POST', url: '/v1/agents', payload: { name: `callers_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, ...extra },
  });
  expect(res.statusCode).toBe(201);
  return res.json();
}

async function start(agentId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await as(keys.runner)({ method: 'POST', url: '/v1/runs', payload: { agentId, input: 'go', ...extra } });
  expect(res.statusCode).toBe(202);
  return res.json().id;
}

const read = async (runId: string, waitMs = 0) =>
  (await as(keys.runner)({ method: 'GET', url: `/v1/runs/${runId}?waitMs=${waitMs}` })).json<RunView>();

const answer = (key: string, runId: string, toolCallId: string, payload: Record<string, unknown>) =>
  as(key)({ method: 'POST', url: `/v1/runs/${runId}/tool-results/${encodeURIComponent(toolCallId)}`, payload });

async function listedWaiting(runId: string): Promise<boolean> {
  const res = await as(keys.runner)({ method: 'GET', url: '/v1/runs?waiting=true&limit=100' });
  return res.json<{ runs: { id: string }[] }>().runs.some((r) => r.id === runId);
}

async function pendingOf(runId: string, count: number): Promise<RunView['pendingCallerTools']> {
  await waitFor(async () => (await read(runId)).pendingCallerTools.length === count, WAIT_MS, `${count} pending caller tool calls`);
  return (await read(runId)).pendingCallerTools;
}

const TWO_CALLS: ScriptStep[] = [
  { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }, { name: 'get_time', arguments: { zone: 'CET' } }] },
  { text: '{{tool_results}}' },
];

test('two caller tools called in one turn: the stream shows both calls, answers in reverse order reach the model, the run completes', async () => {
  const { id } = await agent(TWO_CALLS);
  const runId = await start(id, { callerTools: [WEATHER, TIME] });
  const stream = followSseText(`${baseUrl}/v1/runs/${runId}/events`, { authorization: `Bearer ${keys.runner}` });
  await stream.seen('"name":"get_time"', WAIT_MS);
  await stream.seen('"name":"get_weather"', WAIT_MS);

  const pending = await pendingOf(runId, 2);
  expect(pending.map((p) => [p.toolCallId, p.name, p.arguments])).toEqual([
    ['call_1_1', 'get_weather', { city: 'Paris' }], ['call_1_2', 'get_time', { zone: 'CET' }],
  ]);
  expect(Date.parse(pending[0].expiresAt) - Date.parse(pending[0].askedAt)).toBe(10 * 60_000);
  await waitFor(() => listedWaiting(runId), WAIT_MS, 'the run listed as waiting');

  // Who may answer: the role run, in the run's tenant; an unknown call is not found.
  expect((await answer(keys.reader, runId, 'call_1_2', { content: 'x' })).statusCode).toBe(403);
  expect((await answer(keys.stranger, runId, 'call_1_2', { content: 'x' })).statusCode).toBe(404);
  expect((await answer(keys.runner, runId, 'call_9_9', { content: 'x' })).statusCode).toBe(404);
  expect((await answer(keys.runner, runId, 'call_1_2', { content: [{ type: 'txt', text: 'x' }] })).statusCode).toBe(400);

  const second = await answer(keys.runner, runId, 'call_1_2', { content: '12:00' });
  expect(second.statusCode).toBe(202);
  expect(second.json()).toEqual({ runId, toolCallId: 'call_1_2', name: 'get_time', status: 'answered' });
  expect((await answer(keys.runner, runId, 'call_1_2', { content: 'again' })).statusCode).toBe(409);
  // The turn goes on once both are answered.
  expect((await pendingOf(runId, 1))[0].toolCallId).toBe('call_1_1');
  expect((await read(runId)).status).toBe('running');
  const first = await answer(keys.runner, runId, 'call_1_1', { content: [{ type: 'text', text: 'sunny' }, { type: 'text', text: '21 C' }] });
  expect(first.statusCode).toBe(202);

  expect(await read(runId, 30_000)).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'sunny\n21 C\n12:00' });
  expect((await read(runId)).toolCalls.map((c) => [c.id, c.type, c.status])).toEqual([
    ['call_1_1', 'caller_tool', 'ok'], ['call_1_2', 'caller_tool', 'ok'],
  ]);
  expect((await answer(keys.runner, runId, 'call_1_1', { content: 'late' })).statusCode).toBe(409);

  const text = await stream.text();
  const calls = sseEventsOf<Record<string, unknown>>(text, 'caller_tool_call');
  expect(calls).toEqual(expect.arrayContaining([
    expect.objectContaining({ turn: 1, toolCallId: 'call_1_1', name: 'get_weather', arguments: { city: 'Paris' } }),
    expect.objectContaining({ turn: 1, toolCallId: 'call_1_2', name: 'get_time', arguments: { zone: 'CET' } }),
  ]));
  // Numbered like every event of the run's log: a stream resumed after one replays what follows.
  const events = await listEvents(engine.db, runId);
  const numbered = events.filter((e) => e.type === 'caller_tool_call');
  expect(numbered).toHaveLength(2);
  const replayed = await as(keys.runner)({ method: 'GET', url: `/v1/runs/${runId}/events`, headers: { 'last-event-id': String(numbered[0].seq) } });
  expect(sseEventsOf(replayed.body, 'caller_tool_call')).toHaveLength(1);
  expect(replayed.body).toContain(`id: ${numbered[1].seq}`);
  await waitFor(async () => !(await listedWaiting(runId)), WAIT_MS, 'the run no longer listed as waiting');
});

test('a call not answered within callerToolTimeout reads "Caller tool <name> was not answered within <timeout>."', async () => {
  const { id } = await agent([{ toolCalls: [{ name: 'get_time', arguments: {} }] }, { text: '{{tool_results}}' }]);
  const runId = await start(id, { callerTools: [TIME], callerToolTimeout: '2s' });
  const [pending] = await pendingOf(runId, 1);
  expect(Date.parse(pending.expiresAt) - Date.parse(pending.askedAt)).toBe(2000);
  expect(await read(runId, 30_000)).toMatchObject({ status: 'completed', output: 'Caller tool get_time was not answered within 2s.' });
  expect((await read(runId)).toolCalls[0]).toMatchObject({ type: 'caller_tool', status: 'error' });
  expect((await answer(keys.runner, runId, 'call_1_1', { content: 'too late' })).statusCode).toBe(409);
});

test('a run cancelled while its caller tool waits ends; the call no longer waits, and an answer is refused', async () => {
  const { id } = await agent([{ toolCalls: [{ name: 'get_time', arguments: {} }] }, { text: 'never' }]);
  const runId = await start(id, { callerTools: [TIME] });
  await pendingOf(runId, 1);
  expect((await as(keys.runner)({ method: 'POST', url: `/v1/runs/${runId}/cancel` })).statusCode).toBe(202);
  expect(await read(runId, 30_000)).toMatchObject({ status: 'cancelled', pendingCallerTools: [] });
  const late = await answer(keys.runner, runId, 'call_1_1', { content: 'too late' });
  expect(late.statusCode).toBe(409);
  expect(late.json().detail).toBe('Tool call call_1_1 no longer waits for a result: its run ended');
  const stored = await engine.db.query('SELECT status, answer FROM run_caller_tool_calls WHERE run_id = $1', [runId]);
  expect(stored.rows).toEqual([{ status: 'cancelled', answer: null }]);
});

test('arguments that do not match the schema go back to the model as a tool error, and never reach the caller', async () => {
  const slow = { name: 'lookup', inputSchema: { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } } } };
  const { id } = await agent([
    { toolCalls: [{ name: 'get_weather', arguments: { city: 5 } }, { name: 'lookup', arguments: { code: `${'a'.repeat(40)}b` } }] },
    { text: '{{tool_results}}' },
  ]);
  const runId = await start(id, { callerTools: [WEATHER, slow] });
  const run = await read(runId, 30_000);
  expect(run.status).toBe('completed');
  expect(run.output).toBe('Invalid arguments for caller tool get_weather: arguments/city must be string\n'
    + 'Invalid arguments for caller tool lookup: checking them against the schema took longer than 250 ms');
  expect((await listEvents(engine.db, runId)).some((e) => e.type === 'caller_tool_call')).toBe(false);
  expect((await answer(keys.runner, runId, 'call_1_1', { content: 'x' })).statusCode).toBe(404);
});

test('a caller tool named as another tool of the run is a 400 naming it; so are bad schemas', async () => {
  const fixture = await insertFixtureIntegration(engine.db, { name: `cfx${randomUUID().slice(0, 6)}` }, acme);
  const { id } = await agent([{ text: 'never' }], { integrationIds: [fixture.id] });
  const refused = async (tools: unknown[], field: string, words: string) => {
    const res = await as(keys.runner)({ method: 'POST', url: '/v1/runs', payload: { agentId: id, input: 'go', callerTools: tools } });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toContain(field);
    expect(res.json().detail).toContain(words);
  };
  await refused([TIME, { ...WEATHER, name: 'source_query' }], 'body.callerTools[1].name', 'source_query is a native tool');
  await refused([{ ...WEATHER, name: 'agent__helper' }], 'body.callerTools[0].name', 'sub-agent');
  await refused([{ ...WEATHER, name: `${fixture.name}__echo` }], 'body.callerTools[0].name', `integration ${fixture.name}`);
  await refused([WEATHER, WEATHER], 'callerTools', 'twice');
  await refused([{ ...WEATHER, name: 'has space' }], 'callerTools', 'letters');
  await refused([{ ...WEATHER, inputSchema: { type: 'object', properties: { a: { $ref: 'https://example.com/a.json' } } } }],
    'body.callerTools[0].inputSchema', 'only references within the schema');
  await refused([{ ...WEATHER, inputSchema: { type: 'object', properties: { a: { type: 'strng' } } } }], 'body.callerTools[0].inputSchema', 'compile');
  await refused([{ ...WEATHER, inputSchema: { type: 'string' } }], 'inputSchema', 'object');
  await refused([{ ...WEATHER, inputSchema: { type: 'object', description: 'x'.repeat(17_000) } }], 'inputSchema', '16384 bytes');
  await refused(Array.from({ length: 33 }, (_, i) => ({ ...TIME, name: `t${i}` })), 'callerTools', '32');
  const agentRes = await as(keys.runner)({
    method: 'POST', url: '/v1/agents',
    payload: { name: `callers_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [] }, integrationIds: [fixture.id],
      callerTools: [{ ...WEATHER, name: `${fixture.name}__x` }] },
  });
  expect(agentRes.statusCode).toBe(400);
  expect(agentRes.json().detail).toContain('body.callerTools[0].name');
});

test("an agent's callerTools are its runs' default; its sub-agents' runs do not see them", async () => {
  const child = await agent([{ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'child: {{tool_results}}' }]);
  const parent = await agent([
    { toolCalls: [{ name: `agent__${child.name}`, arguments: { input: 'weather?' } }, { name: 'get_weather', arguments: { city: 'Rome' } }] },
    { text: '{{tool_results}}' },
  ], { subAgents: [child.id], callerTools: [WEATHER] });
  const fetched = await as(keys.runner)({ method: 'GET', url: `/v1/agents/${parent.id}` });
  expect(fetched.json().callerTools).toEqual([WEATHER]);
  const runId = await start(parent.id);
  const [pending] = await pendingOf(runId, 1);
  expect(pending).toMatchObject({ name: 'get_weather', arguments: { city: 'Rome' } });
  const declared = await as(keys.runner)({ method: 'GET', url: `/v1/runs/${runId}/caller-tools` });
  expect(declared.json()).toEqual({ callerTools: [WEATHER], callerToolTimeout: '10m' });
  expect((await answer(keys.runner, runId, pending.toolCallId, { content: 'warm', isError: false })).statusCode).toBe(202);
  const run = await read(runId, 30_000);
  expect(run.status).toBe('completed');
  expect(run.output).toBe('child: A tool with the name get_weather was not found. Only use tools that are available in your given list of tools.\n'
    + 'warm');
});

test('over /mcp, an agent that declares caller tools answers with an error result', async () => {
  const { name } = await agent([{ text: 'never' }], { callerTools: [TIME] });
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${keys.runner}` } },
  }));
  try {
    const result = await client.callTool({ name, arguments: { input: 'go' } });
    expect(result).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'This agent needs tools its caller runs (callerTools); start it through the HTTP API.' }],
    });
  } finally {
    await client.close();
  }
});
