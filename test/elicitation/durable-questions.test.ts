import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Integration } from '../../core/integration';
import { toolResultText } from '../../core/tool-texts';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { followSseText } from '../support/sse-text';
import { waitFor } from '../support/wait';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import { listedAsWaiting } from '../support/waiting-list';

interface PendingInput { inputId: string; toolCallId: string; message: string }
type Call = [tool: string, args?: Record<string, unknown>];

/**
 * A 2026-era server's questions (input_required) wait durably: stored in PostgreSQL, the workflow
 * waiting on a signal and a timer with no activity running, the call retried with the answers by
 * a new activity. Real Temporal, a real v2 MCP server over HTTP; the LLM is the scripted provider.
 */
describe('a 2026-era server asks inside its result: the question waits durably', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let http: ModernHttpServer;
  let baseUrl: string;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    http = await startModernHttpServer();
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await http?.close();
  });

  const integration = (elicitationTimeoutMs?: number) => insertIntegration(engine.db, {
    name: `durable-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: http.url }, elicitation: true,
    ...(elicitationTimeoutMs ? { elicitationTimeoutMs } : {}),
  });

  async function start(i: Integration, calls: Call[]): Promise<string> {
    const script = [{ toolCalls: calls.map(([tool, args]) => ({ name: `${i.name}__${tool}`, arguments: args ?? {} })) }, { text: '{{tool_results}}' }];
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, integrationIds: [i.id], model: { provider: 'scripted', script } });
    const thread = await insertThread(engine.db, agent.id);
    return engine.start({ threadId: thread.id, input: 'go' });
  }

  const pending = async (runId: string) =>
    ((await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json() as { pendingInputs: PendingInput[] }).pendingInputs;

  /** Waits until the run shows `count` pending inputs, and returns them. */
  async function asked(runId: string, count: number): Promise<PendingInput[]> {
    let inputs: PendingInput[] = [];
    await waitFor(async () => (inputs = await pending(runId)).length >= count, 30_000, `${count} pending inputs`);
    return inputs;
  }

  const answer = (runId: string, inputId: string, payload: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload });

  test('answered: no activity runs while it waits, the run is listed as waiting, the call goes on, the content never enters history', async () => {
    const runId = await start(await integration(), [['confirm', { what: 'ship' }]]);
    const [input] = await asked(runId, 1);
    expect(input.message).toBe('Really ship?');
    await waitFor(() => listedAsWaiting(app, runId), 15_000, 'the run listed as waiting');
    const handle = engine.client.workflow.getHandle(runId);
    const described = await handle.describe();
    expect(described.raw.pendingActivities ?? []).toEqual([]);
    expect(described.searchAttributes.waitingFor).toEqual(['input']);

    // Followed from here to run_ended: the question is announced, then said to be resolved.
    const stream = followSseText(`${baseUrl}/v1/runs/${runId}/events`);
    // Answered only once the stream has shown the question: a follower that first reads the run
    // after the answer never sees the question wait, so it announces nothing.
    await stream.seen('event: input_requested');
    // A token in the answer's content, to look for in history: the signal carries only the input id.
    const secret = `secret-${randomUUID()}`;
    const answered = await answer(runId, input.inputId, { action: 'accept', content: { confirm: true, note: secret } });
    expect(answered.statusCode).toBe(200);
    const result = await engine.result(runId);
    expect(result.output).toBe('ship: confirmed=true, state=asked:ship');
    const sse = await stream.text();
    expect(sse).toContain('event: input_requested');
    expect(sse).toMatch(new RegExp(`event: input_resolved\ndata: .*"inputId":"${input.inputId}"`));
    expect(sse.indexOf('event: input_resolved')).toBeLessThan(sse.indexOf('event: run_ended'));

    const events = (await handle.fetchHistory()).events ?? [];
    const raw = JSON.stringify(events);
    // Every payload, decoded: the signal, the activities' inputs and results.
    const history = [...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1], 'base64').toString('utf8')).join('\n');
    expect(history).toContain(`{"inputId":"${input.inputId}"}`);
    expect(history).not.toContain(secret);
    expect(history).not.toContain('"confirm":true');
    // The retried call starts within ~1 s of the answer's signal (measured in history: no worker was waiting).
    const at = (e: (typeof events)[number]) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
    const signalled = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes);
    const retried = events.slice(signalled).find((e) => e.activityTaskStartedEventAttributes);
    expect(at(retried!) - at(events[signalled])).toBeLessThan(1_000);
    const stored = await engine.db.query('SELECT answer FROM run_inputs WHERE input_id = $1', [input.inputId]);
    expect(stored.rows[0].answer).toBeNull();
    await waitFor(async () => !(await listedAsWaiting(app, runId)), 15_000, 'the run no longer listed as waiting');
  });

  test('declined and cancelled: the server reads the action; a second answer is refused (409 input_closed)', async () => {
    const runId = await start(await integration(), [['confirm', { what: 'a' }], ['confirm', { what: 'b' }]]);
    const inputs = await asked(runId, 2);
    const byMessage = Object.fromEntries(inputs.map((i) => [i.message, i]));
    expect((await answer(runId, byMessage['Really a?'].inputId, { action: 'decline' })).statusCode).toBe(200);
    expect((await answer(runId, byMessage['Really b?'].inputId, { action: 'cancel' })).statusCode).toBe(200);
    const again = await answer(runId, byMessage['Really a?'].inputId, { action: 'accept', content: { confirm: true } });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'input_closed' });
    const result = await engine.result(runId);
    expect(result.toolCalls.map((c) => c.result)).toEqual(['a: not confirmed', 'b: not confirmed']);
  });

  test('content invalid for its schema is a 400 naming the field; of two concurrent answers exactly one wins', async () => {
    const runId = await start(await integration(), [['confirm', { what: 'race' }]]);
    const [input] = await asked(runId, 1);
    const invalid = await answer(runId, input.inputId, { action: 'accept', content: { confirm: 'yes' } });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toMatchObject({ field: 'content.confirm' });
    const both = await Promise.all([
      answer(runId, input.inputId, { action: 'accept', content: { confirm: true } }),
      answer(runId, input.inputId, { action: 'accept', content: { confirm: false } }),
    ]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const winner = both.find((r) => r.statusCode === 200)!.json() as { status: string };
    expect(winner.status).toBe('accept');
    const result = await engine.result(runId);
    expect(result.toolCalls[0].result).toMatch(/^race: confirmed=(true|false), state=asked:race$/);
  });

  test('several rounds, several questions a round: the answers go back keyed as asked, the state byte for byte', async () => {
    const runId = await start(await integration(), [['two_rounds']]);
    const first = await asked(runId, 2);
    const nameInput = first.find((i) => i.message === 'Your name?')!;
    const goOn = first.find((i) => i.message === 'Go on?')!;
    expect((await answer(runId, nameInput.inputId, { action: 'accept', content: { name: 'Ada' } })).statusCode).toBe(200);
    // One of two answered: the call still waits.
    await new Promise((r) => setTimeout(r, 500));
    expect((await pending(runId)).map((i) => i.inputId)).toEqual([goOn.inputId]);
    expect((await answer(runId, goOn.inputId, { action: 'accept', content: { confirm: true } })).statusCode).toBe(200);
    let second: PendingInput[] = [];
    await waitFor(async () => (second = await pending(runId)).some((i) => i.message === 'Sure, Ada?'), 30_000, 'the second round');
    expect((await answer(runId, second[0].inputId, { action: 'accept', content: { confirm: false } })).statusCode).toBe(200);
    const result = await engine.result(runId);
    // The second round's state carried é, a lone surrogate and a NUL: the server got it back unchanged.
    expect(result.toolCalls[0].result).toBe('two rounds: Ada:true:false');
  });

  test('more rounds than 8 end the call with the contract text', async () => {
    const runId = await start(await integration(), [['many_rounds']]);
    const result = await engine.result(runId);
    expect(result.toolCalls[0].result).toBe(toolResultText.mcpTooManyRounds(8));
    expect(toolResultText.mcpTooManyRounds(8)).toBe('MCP server asked for input more than 8 times; the call was abandoned.');
  });

  test('not answered in time: the LLM reads the timeout; a late answer is refused', async () => {
    const runId = await start(await integration(2_000), [['confirm', { what: 'late' }]]);
    const [input] = await asked(runId, 1);
    const result = await engine.result(runId);
    expect(result.toolCalls[0]).toMatchObject({ status: 'error', result: 'MCP server question not answered within 2s.' });
    const late = await answer(runId, input.inputId, { action: 'accept', content: { confirm: true } });
    expect(late.statusCode).toBe(409);
  });

  test('a state the server no longer accepts (expired): the LLM reads that the question expired', async () => {
    const runId = await start(await integration(), [['expiring']]);
    const [input] = await asked(runId, 1);
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await answer(runId, input.inputId, { action: 'accept', content: { confirm: true } })).statusCode).toBe(200);
    const result = await engine.result(runId);
    expect(result.toolCalls[0]).toMatchObject({ status: 'error', result: toolResultText.mcpQuestionExpired() });
  });
});
