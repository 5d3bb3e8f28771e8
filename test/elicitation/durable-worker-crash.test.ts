import { randomUUID } from 'node:crypto';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertInputRound } from '../../store/runs/input-rounds';
import { insertThread } from '../../store/threads/threads';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import { exited } from '../support/processes';
import { workerProcesses } from '../support/worker-processes';
import { waitFor } from '../support/wait';
import { listedAsWaiting } from '../support/waiting-list';

interface RunBody { status: string; output: string | null; pendingInputs: { inputId: string }[] }

/**
 * A 2026-era server's question waits in PostgreSQL and the workflow, not in a worker: the worker
 * that stored it is SIGKILLed, another starts, and the answer given afterwards still reaches the
 * server (the call is retried with it by the new worker). Even a worker that dies after storing
 * the question, before Temporal heard its activity end, loses nothing.
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
    // The workflow waits: the activity that stored the question has ended.
    await waitFor(() => listedAsWaiting(h.app, runId), 30_000, 'the run listed as waiting');

    first.kill('SIGKILL');
    await exited(first);
    // The question is still pending with no worker at all: nothing held it.
    expect((await read(runId)).pendingInputs.map((i) => i.inputId)).toEqual([inputId]);
    const second = h.worker();

    const answered = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { confirm: true } } });
    expect(answered.statusCode).toBe(200);
    let run = await read(runId);
    for (let i = 0; i < 10 && run.status === 'running'; i++) run = await read(runId, 30_000);
    expect(run).toMatchObject({ status: 'completed', output: 'after: survive: confirmed=true, state=asked:survive', pendingInputs: [] });
    // The next test's calls go to its own worker only.
    second.kill('SIGKILL');
    await exited(second);
  }, 240_000);

  test('the worker dies after storing the question, before Temporal hears its activity end: the question still waits and its answer reaches the server', async () => {
    const first = h.worker();
    const modern = await insertIntegration(h.engine.db, {
      name: `lost-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: http.url }, elicitation: true, allowPrivateNetwork: true,
    });
    const agent = await insertAgent(h.engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [modern.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${modern.name}__stall`, arguments: { what: 'lost' } }] }, { text: 'after: {{tool_results}}' }] },
    });
    const thread = await insertThread(h.engine.db, agent.id);
    const calls = () => http.methods.filter((m) => m === 'tools/call').length;
    const before = calls();
    const runId = await h.engine.start({ threadId: thread.id, input: 'go' });
    await waitFor(async () => calls() > before, 90_000, 'the call to reach the server');
    // What the activity stores when its server answers input_required (durable-questions.ts), stored
    // here while it is still running; then its worker dies before reporting the activity's end.
    const round = await insertInputRound(h.engine.db, {
      runId, toolCallId: 'call_1_1', round: 1, requestState: 'asked:lost', waitMs: 120_000,
      questions: [{ key: 'confirm', mode: 'form', message: 'Really lost?', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } }],
    });
    first.kill('SIGKILL');
    await exited(first);
    h.worker();
    // The activity's heartbeat times out (10 s); the workflow finds the stored round and waits for it.
    await waitFor(() => listedAsWaiting(h.app, runId), 60_000, 'the run listed as waiting');
    expect((await read(runId)).pendingInputs.map((i) => i.inputId)).toEqual(round.inputIds);
    const answered = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${round.inputIds[0]}`, payload: { action: 'accept', content: { confirm: true } } });
    expect(answered.statusCode).toBe(200);
    let run = await read(runId);
    for (let i = 0; i < 10 && run.status === 'running'; i++) run = await read(runId, 30_000);
    expect(run).toMatchObject({ status: 'completed', output: 'after: lost: confirmed=true, state=asked:lost', pendingInputs: [] });
  }, 240_000);
});
