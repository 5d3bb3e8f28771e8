import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Integration, NewIntegration } from '../../core/integration';
import { toolResultText } from '../../core/tool-texts';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { FAILURE_TEXT, startTaskHttpServer, type TaskHttpServer } from '../fixtures/task-mcp-server';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { waitFor } from '../support/wait';

/**
 * Long tool calls as MCP tasks: the call's activity asks for a task, stores its reference and
 * ends; the workflow polls it with short activities and timers. Real Temporal, a real MCP server
 * built from the v2 SDK over HTTP, on both eras (pinned); the LLM is the scripted provider.
 */
describe.each(['2025-11-25', '2026-07-28'] as const)('tool calls as tasks, %s', (protocol) => {
  let engine: Engine;
  let app: FastifyInstance;
  let server: TaskHttpServer;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    server = await startTaskHttpServer();
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await server?.close();
  });

  const integration = (settings: Partial<NewIntegration> = {}) => insertIntegration(engine.db, {
    name: `tasks-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: server.url }, protocol, ...settings,
  });

  async function start(i: Integration, tool: string, args: Record<string, unknown> = {}): Promise<string> {
    const script = [{ toolCalls: [{ name: `${i.name}__${tool}`, arguments: args }] }, { text: 'after: {{tool_results}}' }];
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, integrationIds: [i.id], model: { provider: 'scripted', script } });
    const thread = await insertThread(engine.db, agent.id);
    return engine.start({ threadId: thread.id, input: 'go' });
  }
  const stored = async (runId: string) => (await engine.db.query<{ status: string; polls: number }>(
    'SELECT status, polls FROM run_tool_tasks WHERE run_id = $1', [runId])).rows;
  /** Waits until the run shows a pending input with this message, and returns its id. */
  async function pendingInput(runId: string, message: string): Promise<string> {
    let inputId = '';
    await waitFor(async () => {
      const run = (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingInputs: { inputId: string; message: string }[] }>();
      inputId = run.pendingInputs.find((p) => p.message === message)?.inputId ?? '';
      return inputId !== '';
    }, 30_000, `the question "${message}"`);
    return inputId;
  }
  const heldTask = (tool: string, before: number) => server.tasks().filter((t) => t.tool === tool).slice(before);

  test('a long call runs as a task: one tools/call, polled with no activity running in between, to its result', async () => {
    const i = await integration();
    const calls = server.calls().length;
    const runId = await start(i, 'slow_report', { seconds: 3 });
    await waitFor(async () => (await stored(runId)).length === 1, 30_000, 'the task stored');
    // Between polls the workflow waits on a timer: at some moment no activity is pending.
    const handle = engine.client.workflow.getHandle(runId);
    await waitFor(async () => ((await handle.describe()).raw.pendingActivities ?? []).length === 0, 10_000, 'no activity pending');
    const result = await engine.result(runId);
    expect(result.output).toBe('after: report ready after 3s');
    expect(result.toolCalls).toMatchObject([{ status: 'ok', type: 'mcp_tool' }]);
    expect(server.calls().slice(calls)).toEqual([{ name: 'slow_report', askedForTask: true }]);
    const [task] = await stored(runId);
    expect(task.status).toBe('completed');
    // Backing off from 1 s: a 3 s task is polled a few times, not every 200 ms as the server suggests.
    expect(task.polls).toBeGreaterThanOrEqual(2);
    expect(task.polls).toBeLessThanOrEqual(4);
  });

  test('a run waiting on a task continues-as-new while it waits, carrying the task: polled on to its result, never started again', async () => {
    const i = await integration();
    const calls = server.calls().length;
    const script = [{ toolCalls: [{ name: `${i.name}__slow_report`, arguments: { seconds: 4 } }] }, { text: 'after: {{tool_results}}' }];
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, integrationIds: [i.id], model: { provider: 'scripted', script } });
    // Any history is over the bound: each execution polls once, then continues-as-new with the task.
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go', continueAsNewAtHistoryBytes: 1 });
    const result = await engine.result(runId);
    expect(result.output).toBe('after: report ready after 4s');
    expect(server.calls().slice(calls)).toEqual([{ name: 'slow_report', askedForTask: true }]);
    const executions: string[] = [];
    for await (const e of engine.client.workflow.list({ query: `WorkflowId = '${runId}'` })) executions.push(e.status.name);
    // The task's polls went on in later executions (more than the one at the turn's end).
    expect(executions.filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(2);
    expect(await stored(runId)).toMatchObject([{ status: 'completed' }]);
  });

  test('a task that fails: the LLM reads the server\'s message', async () => {
    const i = await integration();
    const runId = await start(i, 'failing_task');
    expect((await engine.result(runId)).output).toBe(`after: ${toolResultText.mcpToolFailed(FAILURE_TEXT)}`);
  });

  test('a server that answers a task-supporting call at once: its result, no task kept', async () => {
    const i = await integration();
    const runId = await start(i, 'quick_report');
    expect((await engine.result(runId)).output).toMatch(/^after: /);
    expect(await stored(runId)).toEqual([]);
  });

  test('past the integration\'s taskTimeout the task is cancelled at the server and the LLM is told', async () => {
    const i = await integration({ taskTimeoutMs: 2_000 });
    const before = server.tasks().filter((t) => t.tool === 'never_ends').length;
    const runId = await start(i, 'never_ends');
    expect((await engine.result(runId)).output).toBe(`after: ${toolResultText.mcpToolFailed('the task did not finish within 2s')}`);
    expect(heldTask('never_ends', before)).toMatchObject([{ status: 'cancelled' }]);
    expect(await stored(runId)).toMatchObject([{ status: 'timed_out' }]);
  });

  test('a task that asks a question: 2026, a pending input whose answer goes to the task; 2025, polled until its taskTimeout', async () => {
    const modern = protocol === '2026-07-28';
    const i = await integration({ elicitation: true, taskTimeoutMs: modern ? 600_000 : 2_000 });
    const runId = await start(i, 'needs_approval');
    if (!modern) {
      // The 2025 era asks a task's questions only over a held tasks/result, which a stateless server
      // cannot do (its answer would reach another instance): the task is held and polled until its
      // taskTimeout (tool-tasks-legacy-questions.test.ts relays them from a sessionful server).
      expect((await engine.result(runId)).output).toBe(`after: ${toolResultText.mcpToolFailed('the task did not finish within 2s')}`);
      return;
    }
    const inputId = await pendingInput(runId, 'Publish the report?');
    expect(((await engine.client.workflow.getHandle(runId).describe()).raw.pendingActivities ?? [])).toEqual([]);
    const answered = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { ok: true } } });
    expect(answered.statusCode).toBe(200);
    expect((await engine.result(runId)).output).toBe('after: published: {"action":"accept","content":{"ok":true}}');
    expect(await stored(runId)).toMatchObject([{ status: 'completed' }]);
  });

  test('a server that asks before it starts a task (2026): the call is made the usual way, and its question waits durably', async () => {
    const i = await integration({ elicitation: true });
    const calls = server.calls().length;
    const runId = await start(i, 'asks_first');
    if (protocol === '2025-11-25') {
      expect((await engine.result(runId)).output).toBe('after: asks_first: "no question on this era"');
      return;
    }
    const inputId = await pendingInput(runId, 'Go ahead?');
    expect((await app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { ok: true } } })).statusCode).toBe(200);
    expect((await engine.result(runId)).output).toBe('after: asks_first: {"action":"accept","content":{"ok":true}}');
    // The task request, the call made the usual way, and the call with the answer; no task was kept.
    expect(server.calls().slice(calls)).toEqual([
      { name: 'asks_first', askedForTask: true }, { name: 'asks_first', askedForTask: false }, { name: 'asks_first', askedForTask: false },
    ]);
    expect(await stored(runId)).toEqual([]);
  });

  test('a run cancelled while its task works cancels the task at the server', async () => {
    const i = await integration();
    const before = server.tasks().filter((t) => t.tool === 'never_ends').length;
    const runId = await start(i, 'never_ends');
    await waitFor(async () => (await stored(runId)).length === 1, 30_000, 'the task stored');
    expect((await app.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` })).statusCode).toBe(202);
    await expect(engine.client.workflow.getHandle(runId).result()).rejects.toThrow();
    await waitFor(async () => heldTask('never_ends', before)[0]?.status === 'cancelled', 10_000, 'the task cancelled at the server');
    expect(await stored(runId)).toMatchObject([{ status: 'cancelled' }]);
  });
});
