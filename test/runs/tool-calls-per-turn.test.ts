import { temporal } from '@temporalio/proto';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import type { Integration } from '../../core/integration';
import type { RunLimits } from '../../core/run-limits';
import { tooManyToolCallsText } from '../../core/tool-texts';
import { insertAgent } from '../../store/agents';
import { listEvents } from '../../store/runs/events';
import { insertThread } from '../../store/threads/threads';
import { logger, startEngine, type Engine } from '../support/engine';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { waitFor, within } from '../support/wait';

/**
 * A turn runs at most `limits.maxToolCallsPerTurn` of its tool calls (default 128), the first in
 * the model's order; the LLM turn's activity answers each later one itself, so that the workflow
 * never has more calls of one turn than that, whatever the model asks (Temporal refuses more than
 * 2,000 activities pending at once: a run past it was wedged).
 */
describe('tool calls per turn', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let fixture: Integration;
  beforeAll(async () => {
    engine = await startEngine('embedded');
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0 });
    // As many calls at once as a turn may run: what these tests count is the turn's limit, not the integration's slots (tool-slots.test.ts).
    fixture = await insertFixtureIntegration(engine.db, { maxConcurrentCalls: 1_000 });
  });
  afterAll(async () => {
    await app?.close();
    await engine?.close();
  });

  const echo = (text: string) => ({ name: `${fixture.name}__echo`, arguments: { text } });

  async function start(script: ScriptStep[], limits?: RunLimits, runLimits?: RunLimits) {
    const agent = await insertAgent(engine.db, {
      name: `per-turn-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: [fixture.id], limits: limits ?? null,
    });
    const thread = await insertThread(engine.db, agent.id);
    return engine.start({ threadId: thread.id, input: 'go', ...(runLimits ? { limits: runLimits } : {}) });
  }

  test('past the limit, each later call reads the text, and the next turn reads every call\'s result in order', async () => {
    const runId = await start([{ toolCalls: [echo('a'), echo('b'), echo('c')] }, { text: '{{tool_results}}' }], { maxToolCallsPerTurn: 2 });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', turns: 2, output: ['echo: a', 'echo: b', tooManyToolCallsText(2)].join('\n') });
    expect(result.toolCalls.map((c) => [c.status, c.result, c.type])).toEqual([
      ['ok', 'echo: a', 'mcp_tool'], ['ok', 'echo: b', 'mcp_tool'], ['error', tooManyToolCallsText(2), 'mcp_tool'],
    ]);
    // The refused call is told on the event stream as the others are, with its end.
    const events = await listEvents(engine.db, runId);
    const ended = events.filter((e) => e.type === 'tool_call_ended').map((e) => [e.data.toolCallId, e.data.status]);
    expect(ended.sort()).toEqual([['call_1_1', 'ok'], ['call_1_2', 'ok'], ['call_1_3', 'error']]);
    expect(events.filter((e) => e.type === 'tool_call_started')).toHaveLength(3);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  test('a run\'s own limit tightens its agent\'s', async () => {
    const result = await engine.result(await start([{ toolCalls: [echo('a'), echo('b')] }, { text: 'done' }], { maxToolCallsPerTurn: 2 }, { maxToolCallsPerTurn: 1 }));
    expect(result.toolCalls.map((c) => c.result)).toEqual(['echo: a', tooManyToolCallsText(1)]);
  });

  test('2,500 calls in one turn, at the default limit: 128 run, the others read the text, the run completes, history stays small', async () => {
    const calls = Array.from({ length: 2_500 }, (_, i) => echo(`n${i}`));
    const runId = await start([{ toolCalls: calls }, { text: 'done' }]);
    const handle = engine.client.workflow.getHandle(runId);
    // A run past Temporal's limit of pending activities never ended: it is ended here so that the test says so.
    const result = await within(engine.result(runId), 120_000, undefined);
    if (!result) await handle.terminate('the test gave up waiting').catch(() => undefined);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'done', turns: 2 });
    const results = result!.toolCalls.map((c) => c.result);
    expect(results).toHaveLength(2_500);
    expect(results.slice(0, 128)).toEqual(calls.slice(0, 128).map((c) => `echo: ${c.arguments.text}`));
    expect(new Set(results.slice(128))).toEqual(new Set([tooManyToolCallsText(128)]));
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callMcpTool');
    expect(scheduled).toHaveLength(128);
    // The calls refused never pass through history: it holds about what 128 calls take.
    const bytes = temporal.api.history.v1.History.encode(history).finish().length;
    process.stdout.write(`history: ${bytes} bytes, ${history.events?.length} events for 2,500 calls\n`);
    expect(bytes).toBeLessThan(250_000);
  }, 180_000);

  test('a cancel during a turn with many calls under way ends the run', async () => {
    const hang = { name: `${fixture.name}__hang`, arguments: {} };
    const runId = await start([{ toolCalls: Array.from({ length: 2_500 }, () => hang) }, { text: 'never' }]);
    await waitFor(async () => (await listEvents(engine.db, runId)).some((e) => e.type === 'tool_call_started'), 60_000, 'a call under way');
    const handle = engine.client.workflow.getHandle(runId);
    await handle.cancel();
    const result = await within(engine.result(runId), 60_000, undefined);
    if (!result) await handle.terminate('the test gave up waiting').catch(() => undefined);
    expect(result).toMatchObject({ status: 'cancelled', stopReason: 'cancelled' });
  }, 180_000);

  test('the API takes maxToolCallsPerTurn from 1 to 1,000 on agents and runs', async () => {
    const model = { provider: 'scripted', script: [{ text: 'hi' }] };
    const agent = (limits: unknown) => app.inject({ method: 'POST', url: '/v1/agents', payload: { name: `t${randomUUID().slice(0, 8)}`, model, limits } });
    expect((await agent({ maxToolCallsPerTurn: 0 })).statusCode).toBe(400);
    expect((await agent({ maxToolCallsPerTurn: 1001 })).statusCode).toBe(400);
    const created = await agent({ maxToolCallsPerTurn: 1000 });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ limits: { maxToolCallsPerTurn: 1000 } });
    const run = (limits: unknown) => app.inject({ method: 'POST', url: '/v1/runs', payload: { agentId: created.json<{ id: string }>().id, input: 'go', limits } });
    expect((await run({ maxToolCallsPerTurn: 1001 })).statusCode).toBe(400);
    expect((await run({ maxToolCallsPerTurn: 1 })).statusCode).toBe(202);
  });
});
