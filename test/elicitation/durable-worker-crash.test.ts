import { randomUUID } from 'node:crypto';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import { exited } from '../support/processes';
import { workerProcesses } from '../support/worker-processes';
import { waitFor } from '../support/wait';

interface RunBody { status: string; output: string | null; pendingInputs: { inputId: string }[] }

/**
 * A 2026-era server's question waits in PostgreSQL and the workflow, not in a worker: the worker
 * that stored it is SIGKILLed, another starts, and the answer given afterwards still reaches the
 * server (the call is retried with it by the new worker).
 */
describe('a 2026-era question survives its worker', () => {
  const h = workerProcesses();
  let http: ModernHttpServer;
  beforeAll(async () => {
    http = await startModernHttpServer();
  });
  afterAll(async () => {
    await http?.close();
  });

  const read = async (runId: string, waitMs = 0) =>
    (await h.app.inject({ method: 'GET', url: `/v1/runs/${runId}${waitMs ? `?waitMs=${waitMs}` : ''}` })).json<RunBody>();

  test('the worker is SIGKILLed while the question waits; a new worker retries the call with the answer', async () => {
    const first = h.worker();
    const modern = await insertIntegration(h.engine.db, {
      name: `durable-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: http.url }, elicitation: true, allowPrivateNetwork: true,
    });
    const agent = await insertAgent(h.engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [modern.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${modern.name}__confirm`, arguments: { what: 'survive' } }] }, { text: 'after: {{tool_results}}' }] },
    });
    const thread = await insertThread(h.engine.db, agent.id);
    const runId = await h.engine.start({ threadId: thread.id, input: 'go' });
    let inputId = '';
    await waitFor(async () => Boolean(inputId = (await read(runId)).pendingInputs[0]?.inputId ?? ''), 90_000, 'the question');

    first.kill('SIGKILL');
    await exited(first);
    // The question is still pending with no worker at all: nothing held it.
    expect((await read(runId)).pendingInputs.map((i) => i.inputId)).toEqual([inputId]);
    h.worker();

    const answered = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { confirm: true } } });
    expect(answered.statusCode).toBe(200);
    let run = await read(runId);
    for (let i = 0; i < 10 && run.status === 'running'; i++) run = await read(runId, 30_000);
    expect(run).toMatchObject({ status: 'completed', output: 'after: survive: confirmed=true, state=asked:survive', pendingInputs: [] });
  }, 240_000);
});
