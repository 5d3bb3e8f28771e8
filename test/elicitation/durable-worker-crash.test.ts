import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import { logger, startEngine, type Engine } from '../support/engine';
import { exited, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

interface RunBody { status: string; output: string | null; pendingInputs: { inputId: string }[] }

/**
 * A 2026-era server's question waits in PostgreSQL and the workflow, not in a worker: the worker
 * that stored it is SIGKILLed, another starts, and the answer given afterwards still reaches the
 * server (the call is retried with it by the new worker).
 */
describe('a 2026-era question survives its worker', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let http: ModernHttpServer;
  const workers: ChildProcess[] = [];
  const worker = () => {
    const child = spawnWorker({ DATABASE_URL: testStack().databases.embedded, TASK_QUEUE: engine.taskQueue, SECRETS_KEY: testStack().secretsKey });
    workers.push(child);
    return child;
  };

  beforeAll(async () => {
    engine = await startEngine('embedded', { worker: false });
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0 });
    http = await startModernHttpServer();
  });
  afterAll(async () => {
    for (const w of workers) {
      if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
      await exited(w);
    }
    await app?.close();
    await engine?.close();
    await http?.close();
  });

  const read = async (runId: string, waitMs = 0) =>
    (await app.inject({ method: 'GET', url: `/v1/runs/${runId}${waitMs ? `?waitMs=${waitMs}` : ''}` })).json<RunBody>();

  test('the worker is SIGKILLed while the question waits; a new worker retries the call with the answer', async () => {
    const first = worker();
    const modern = await insertIntegration(engine.db, {
      name: `durable-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: http.url }, elicitation: true, allowPrivateNetwork: true,
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [modern.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${modern.name}__confirm`, arguments: { what: 'survive' } }] }, { text: 'after: {{tool_results}}' }] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    let inputId = '';
    await waitFor(async () => Boolean(inputId = (await read(runId)).pendingInputs[0]?.inputId ?? ''), 90_000, 'the question');

    first.kill('SIGKILL');
    await exited(first);
    // The question is still pending with no worker at all: nothing held it.
    expect((await read(runId)).pendingInputs.map((i) => i.inputId)).toEqual([inputId]);
    worker();

    const answered = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { confirm: true } } });
    expect(answered.statusCode).toBe(200);
    let run = await read(runId);
    for (let i = 0; i < 10 && run.status === 'running'; i++) run = await read(runId, 30_000);
    expect(run).toMatchObject({ status: 'completed', output: 'after: survive: confirmed=true, state=asked:survive', pendingInputs: [] });
  }, 240_000);
});
