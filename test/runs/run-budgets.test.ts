import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import type { RunLimits } from '../../core/run-limits';
import { durationOverBudgetText, toolCallOverBudgetText } from '../../core/tool-texts';
import { insertAgent } from '../../store/agents';
import { listEvents } from '../../store/runs/events';
import { runTranscript } from '../../store/runs/transcript';
import { insertThread, threadMessages } from '../../store/threads/threads';
import { logger, startEngine, type Engine } from '../support/engine';

/** A run's budget: each limit reached exactly stops the run, completed with stopReason "budget", and the LLM is not asked again. */
describe('run budgets', () => {
  let engine: Engine;
  let app: FastifyInstance;
  beforeAll(async () => {
    engine = await startEngine('embedded');
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await engine?.close();
  });

  async function budgeted(script: ScriptStep[], limits: RunLimits | null, runLimits?: RunLimits) {
    const agent = await insertAgent(engine.db, { name: `budget-${randomUUID()}`, model: { provider: 'scripted', script }, limits });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go', ...(runLimits ? { limits: runLimits } : {}) });
    const result = await engine.result(runId);
    const turnsStarted = (await listEvents(engine.db, runId)).filter((e) => e.type === 'turn_started').length;
    return { runId, threadId: thread.id, result, turnsStarted };
  }

  const call = (name: string) => ({ name, arguments: {} });

  test('maxToolCalls: the calls past it are not made, the LLM reads why, and it is not asked again', async () => {
    const { runId, threadId, result, turnsStarted } = await budgeted([
      { text: 'first', toolCalls: [call('a'), call('b')] },
      { text: 'second', toolCalls: [call('c'), call('d'), call('e')] },
      { text: 'never' },
    ], { maxToolCalls: 3 });
    expect(result).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxToolCalls', turns: 2, output: 'second' });
    expect(turnsStarted).toBe(2);
    expect(result.toolCalls.map((c) => [c.name, c.result])).toEqual([
      ['a', expect.stringContaining('not found')], ['b', expect.stringContaining('not found')], ['c', expect.stringContaining('not found')],
      ['d', toolCallOverBudgetText(3)], ['e', toolCallOverBudgetText(3)],
    ]);
    // The turn stays whole: the thread keeps every call with its result.
    expect((await threadMessages(engine.db, threadId)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant', 'tool', 'tool', 'tool']);
    const ended = (await listEvents(engine.db, runId)).at(-1);
    expect(ended).toMatchObject({ type: 'run_ended', data: { status: 'completed', stopReason: 'budget', limitReached: 'maxToolCalls' } });
  });

  test('maxToolCalls reached exactly: the next turn may still answer', async () => {
    const { result } = await budgeted([{ toolCalls: [call('a')] }, { text: 'done' }], { maxToolCalls: 1 });
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'done', turns: 2 });
  });

  test('maxInputTokens: reached after a turn, its calls are made and the run stops before the next', async () => {
    const { result, turnsStarted } = await budgeted([{ text: 'looking', toolCalls: [call('a')] }, { text: 'never' }], null, { maxInputTokens: 1 });
    expect(result).toMatchObject({ stopReason: 'budget', limitReached: 'maxInputTokens', turns: 1, output: 'looking' });
    expect(result.toolCalls).toHaveLength(1);
    expect(turnsStarted).toBe(1);
  });

  test('a run\'s limits tighten its agent\'s, never widen them', async () => {
    const wider = await budgeted([{ toolCalls: [call('a'), call('b')] }, { text: 'never' }], { maxToolCalls: 1 }, { maxToolCalls: 10 });
    expect(wider.result).toMatchObject({ stopReason: 'budget', limitReached: 'maxToolCalls' });
    expect(wider.result.toolCalls.map((c) => c.result)[1]).toBe(toolCallOverBudgetText(1));
    const tighter = await budgeted([{ toolCalls: [call('a'), call('b')] }, { text: 'never' }], { maxToolCalls: 10 }, { maxToolCalls: 0 });
    expect(tighter.result.toolCalls.map((c) => c.result)).toEqual([toolCallOverBudgetText(0), toolCallOverBudgetText(0)]);
  });

  test('maxOutputTokens caps each turn at what is left, then stops the run', async () => {
    const { runId, result, turnsStarted } = await budgeted([{ text: 'x'.repeat(200), toolCalls: [call('a')] }, { text: 'never' }], { maxOutputTokens: 5 });
    // The scripted model writes 4 characters per token: the turn was cut at 5 tokens.
    const transcript = await runTranscript(engine.db, runId);
    expect(transcript.find((m) => m.message.role === 'assistant')?.message.content).toBe('x'.repeat(20));
    expect(result).toMatchObject({ stopReason: 'budget', limitReached: 'maxOutputTokens', turns: 1 });
    expect(result.usage.outputTokens).toBeGreaterThanOrEqual(5);
    expect(turnsStarted).toBe(1);
  });

  test('maxDuration: past it, a turn\'s calls are not made and the run stops', async () => {
    const { result } = await budgeted([{ delayMs: 1200, toolCalls: [call('a')] }, { text: 'never' }], { maxDuration: '1s' });
    expect(result).toMatchObject({ stopReason: 'budget', limitReached: 'maxDuration', turns: 1 });
    expect(result.toolCalls.map((c) => c.result)).toEqual([durationOverBudgetText('1s')]);
  });

  test('the API takes limits on agents and runs, checks them, and shows what stopped a run', async () => {
    const model = { provider: 'scripted', script: [{ toolCalls: [call('a'), call('b')] }, { text: 'never' }] };
    const bad = await app.inject({ method: 'POST', url: '/v1/agents', payload: { name: `b${randomUUID().slice(0, 8)}`, model, limits: { maxDuration: '90y' } } });
    expect(bad.statusCode).toBe(400);
    expect((await app.inject({ method: 'POST', url: '/v1/agents', payload: { name: `b${randomUUID().slice(0, 8)}`, model, limits: { maxCost: 1 } } })).statusCode).toBe(400);
    const created = await app.inject({ method: 'POST', url: '/v1/agents', payload: { name: `b${randomUUID().slice(0, 8)}`, model, limits: { maxToolCalls: 5, maxDuration: '10m' } } });
    expect(created.statusCode).toBe(201);
    const agent = created.json<{ id: string; limits: RunLimits | null }>();
    expect(agent.limits).toEqual({ maxToolCalls: 5, maxDuration: '10m' });

    const started = await app.inject({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.id, input: 'go', limits: { maxToolCalls: 1 } } });
    expect(started.statusCode).toBe(202);
    const { id } = started.json<{ id: string }>();
    const run = (await app.inject({ method: 'GET', url: `/v1/runs/${id}?waitMs=30000` })).json();
    expect(run).toMatchObject({ status: 'completed', stopReason: 'budget', limitReached: 'maxToolCalls', usageWithChildren: run.usage });
    expect((await app.inject({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.id, input: 'go', limits: { maxToolCalls: -1 } } })).statusCode).toBe(400);

    const cleared = await app.inject({ method: 'PATCH', url: `/v1/agents/${agent.id}`, payload: { limits: null } });
    expect(cleared.json()).toMatchObject({ limits: null });
  });
});
