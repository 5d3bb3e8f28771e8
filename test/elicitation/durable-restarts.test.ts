import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import type { Db } from '../../store/pool';
import { insertThread } from '../../store/threads/threads';
import { installSecretKeys } from '../../platform/secrets/key-ring';
import { keyRing } from '../../platform/secrets/secret-box';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { restartableTemporal } from '../support/restartable-temporal';
import { waitFor } from '../support/wait';

interface RunBody { status: string; stopReason: string | null; output: string | null; pendingInputs: { inputId: string; message: string }[] }

/** An agent whose one tool call is the 2026-era fixture's `confirm`, then the tool's result as its answer. */
async function confirmThread(db: Db, http: ModernHttpServer, what: string): Promise<string> {
  const modern = await insertIntegration(db, {
    name: `wait-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: http.url }, elicitation: true, allowPrivateNetwork: true,
  });
  const agent = await insertAgent(db, {
    name: `agent-${randomUUID()}`, integrationIds: [modern.id],
    model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${modern.name}__confirm`, arguments: { what } }] }, { text: 'after: {{tool_results}}' }] },
  });
  return (await insertThread(db, agent.id)).id;
}

/** The API's view of a run, as a caller reads it; `waitMs` long-polls for its end. */
const reader = (app: () => FastifyInstance) => async (runId: string, waitMs = 0) =>
  (await app().inject({ method: 'GET', url: `/v1/runs/${runId}${waitMs ? `?waitMs=${waitMs}` : ''}` })).json<RunBody>();

const toolCalls = (http: ModernHttpServer) => http.methods.filter((m) => m === 'tools/call').length;

/**
 * A 2026-era question waits in PostgreSQL and as a workflow condition with a timer, nothing else:
 * the Temporal server may restart under it, and a cancel ends it for good.
 */
describe('a 2026-era question waiting durably, through restarts and cancels', () => {
  let http: ModernHttpServer;
  beforeAll(async () => {
    http = await startModernHttpServer();
  });
  afterAll(async () => {
    await http?.close();
  });

  /** Its own dev server, persisted in a file, as test/approvals/temporal-restart.test.ts does: the suites sharing the global one are not disturbed. */
  describe('the Temporal server restarts while the question waits', () => {
    beforeAll(() => {
      // As a composition root does: the API seals the answer's content under SECRETS_KEY.
      installSecretKeys(keyRing(Buffer.from(testStack().secretsKey, 'base64')));
    });
    const h = restartableTemporal('input-restart');
    const read = reader(() => h.app);

    test('the answer, given after the restart, reaches the run at once and the call goes on with it', async () => {
      const threadId = await confirmThread(h.db, http, 'restart');
      const started = await h.app.inject({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'go' } });
      expect(started.statusCode).toBe(202);
      const runId = started.json<{ id: string }>().id;
      let inputId = '';
      await waitFor(async () => Boolean(inputId = (await read(runId)).pendingInputs[0]?.inputId ?? ''), 45_000, 'the question');
      const callsBefore = toolCalls(http);

      const { before, after } = await h.restart();
      // The same port and database file: the API's client and the worker find their server where it was.
      expect(after).toBe(before);
      expect(await read(runId)).toMatchObject({ status: 'running', pendingInputs: [{ inputId, message: 'Really restart?' }] });

      // The answer is stored even when its signal cannot reach Temporal, so it is given once; the
      // elicitation timeout is the default 10 min: a run that completes within seconds was signalled.
      const answered = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { confirm: true } } });
      expect(answered.statusCode).toBe(200);
      let run = await read(runId, 20_000);
      if (run.status === 'running') run = await read(runId, 20_000);
      expect(run).toMatchObject({ status: 'completed', output: 'after: restart: confirmed=true, state=asked:restart', pendingInputs: [] });
      // One retried call carried the answer back, no more.
      expect(toolCalls(http) - callsBefore).toBe(1);
    }, 120_000);

    test('the whole engine (worker, API, Temporal server) stops and starts again: the question still waits, and its answer ends the run', async () => {
      const threadId = await confirmThread(h.db, http, 'redeploy');
      const started = await h.app.inject({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'go' } });
      const runId = started.json<{ id: string }>().id;
      let inputId = '';
      await waitFor(async () => Boolean(inputId = (await read(runId)).pendingInputs[0]?.inputId ?? ''), 45_000, 'the question');
      const callsBefore = toolCalls(http);

      await h.restartAll();
      expect(await read(runId)).toMatchObject({ status: 'running', pendingInputs: [{ inputId, message: 'Really redeploy?' }] });
      const answered = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { confirm: true } } });
      expect(answered.statusCode).toBe(200);
      let run = await read(runId, 20_000);
      if (run.status === 'running') run = await read(runId, 20_000);
      expect(run).toMatchObject({ status: 'completed', output: 'after: redeploy: confirmed=true, state=asked:redeploy', pendingInputs: [] });
      expect(toolCalls(http) - callsBefore).toBe(1);
    }, 150_000);
  });

  describe('the run is cancelled while the question waits', () => {
    let engine: Engine;
    let app: FastifyInstance;
    const read = reader(() => app);
    beforeAll(async () => {
      ({ engine, app } = await startApiEngine());
    });
    afterAll(async () => {
      await stopApiEngine({ engine, app });
    });

    test('the run ends cancelled, the question is no longer listed, and a late answer is refused and starts nothing', async () => {
      const threadId = await confirmThread(engine.db, http, 'cancel');
      const runId = await engine.start({ threadId, input: 'go' });
      let inputId = '';
      await waitFor(async () => Boolean(inputId = (await read(runId)).pendingInputs[0]?.inputId ?? ''), 30_000, 'the question');
      const callsBefore = toolCalls(http);

      const cancelled = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` });
      expect(cancelled.statusCode).toBe(202);
      let run = await read(runId, 20_000);
      if (run.status === 'running') run = await read(runId, 20_000);
      expect(run).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', pendingInputs: [] });
      // The result is written just before the workflow closes: wait for the close.
      const handle = engine.client.workflow.getHandle(runId);
      await expect(handle.result()).rejects.toThrow();
      expect((await handle.describe()).status.name).toBe('CANCELLED');
      const historyLength = (await handle.fetchHistory()).events?.length;

      const late = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { confirm: true } } });
      expect(late.statusCode).toBe(409);
      expect(late.json()).toMatchObject({ code: 'input_closed' });
      // Nothing the answer could have started: give a retried call time to reach the server.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(toolCalls(http)).toBe(callsBefore);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
      expect((await handle.fetchHistory()).events?.length).toBe(historyLength);
      expect(await read(runId)).toMatchObject({ status: 'cancelled', pendingInputs: [] });
      // The answer was not recorded.
      const stored = await engine.db.query('SELECT status, answer FROM run_inputs WHERE input_id = $1', [inputId]);
      expect(stored.rows[0].answer).toBeNull();
      expect(stored.rows[0].status).not.toBe('accept');
    }, 60_000);
  });
});
