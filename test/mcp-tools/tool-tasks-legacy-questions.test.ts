import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Integration } from '../../core/integration';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startSessionTaskServer, type SessionTaskServer } from '../fixtures/task-mcp-sessions';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { listedAsWaiting } from '../support/waiting-list';

/**
 * A 2025-era task that asks: the 2025-11-25 protocol sends its question only over a held
 * tasks/result, on a connection that lives (here a sessionful HTTP server built from the v2 SDK).
 * The engine holds it in an activity, the question becomes a pending input of the run, and the
 * answer reaches the task, which goes on to its result. Real Temporal; the LLM is scripted.
 */
describe('a 2025-era task\'s questions, relayed over a held tasks/result', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let server: SessionTaskServer;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    server = await startSessionTaskServer();
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await server?.close();
  });

  async function start(i: Integration): Promise<string> {
    const script = [{ toolCalls: [{ name: `${i.name}__needs_approval`, arguments: {} }] }, { text: 'after: {{tool_results}}' }];
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, integrationIds: [i.id], model: { provider: 'scripted', script } });
    return engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
  }

  async function pendingInput(runId: string): Promise<string> {
    let inputId = '';
    await waitFor(async () => {
      const run = (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingInputs: { inputId: string; message: string }[] }>();
      inputId = run.pendingInputs.find((p) => p.message === 'Publish the report?')?.inputId ?? '';
      return inputId !== '';
    }, 60_000, 'the task\'s question');
    return inputId;
  }

  test.each([
    ['accept', { action: 'accept', content: { ok: true } }, 'after: published: {"action":"accept","content":{"ok":true}}'],
    ['decline', { action: 'decline' }, 'after: published: {"action":"decline"}'],
  ] as const)('answered (%s): the answer reaches the task, which completes with it', async (_name, answer, output) => {
    const i = await insertIntegration(engine.db, {
      name: `legacy-tasks-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: server.url }, protocol: '2025-11-25', elicitation: true,
    });
    const runId = await start(i);
    const inputId = await pendingInput(runId);
    // The 2025 protocol needs a live request: one activity holds tasks/result while the person decides.
    const pending = (await engine.client.workflow.getHandle(runId).describe()).raw.pendingActivities ?? [];
    expect(pending.map((a) => a.activityType?.name)).toEqual(['relayMcpTaskQuestions']);
    await waitFor(() => listedAsWaiting(app, runId), 15_000, 'the run listed as waiting');
    const answered = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: answer });
    expect(answered.statusCode).toBe(200);
    const result = await engine.result(runId);
    expect(result.output).toBe(output);
    const { rows } = await engine.db.query('SELECT status FROM run_tool_tasks WHERE run_id = $1', [runId]);
    expect(rows).toEqual([{ status: 'completed' }]);
    await waitFor(async () => !(await listedAsWaiting(app, runId)), 15_000, 'the run no longer listed as waiting');
  });
});
