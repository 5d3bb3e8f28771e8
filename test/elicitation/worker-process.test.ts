import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { exited } from '../support/processes';
import { workerProcesses } from '../support/worker-processes';
import { waitFor } from '../support/wait';
import { listedAsWaiting } from '../support/waiting-list';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

interface RunBody {
  status: string; output: string | null; pendingInputs: { inputId: string }[]; toolCalls: { status: string; result: string }[];
}

/**
 * An MCP server's question waits inside the running tool-call activity, in a worker process of its
 * own here (the API in this one): when that worker dies, the wait ends with it, the call is not
 * repeated, the LLM reads why, and the run goes on on another worker (as docs/integrations.md says).
 */
describe('a question asked in a worker process of its own', () => {
  const h = workerProcesses();

  const read = async (runId: string, waitMs = 0) =>
    (await h.app.inject({ method: 'GET', url: `/v1/runs/${runId}${waitMs ? `?waitMs=${waitMs}` : ''}` })).json<RunBody>();

  /** A run whose one tool call asks a question, and the question once the API shows it. */
  async function askingRun(): Promise<{ runId: string; inputId: string }> {
    const created = await h.app.inject({
      method: 'POST', url: '/v1/integrations',
      payload: { name: `ask-${randomUUID().slice(0, 8)}`, elicitation: true, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT } },
    });
    expect(created.statusCode).toBe(201);
    const fx = created.json<{ id: string; name: string }>();
    const agent = await insertAgent(h.engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fx.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fx.name}__ask`, arguments: { message: 'Still there?' } }] }, { text: 'after: {{tool_results}}' }] },
    });
    const thread = await insertThread(h.engine.db, agent.id);
    const started = await h.app.inject({ method: 'POST', url: `/v1/threads/${thread.id}/runs`, payload: { input: 'go' } });
    const runId = started.json<{ id: string }>().id;
    let inputId = '';
    await waitFor(async () => Boolean(inputId = (await read(runId)).pendingInputs[0]?.inputId ?? ''), 90_000, 'the question');
    return { runId, inputId };
  }

  test('is answered through PostgreSQL: the worker process relays the API\'s answer to the server', async () => {
    const only = h.worker();
    const { runId, inputId } = await askingRun();
    const answered = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { name: 'Ada' } } });
    expect(answered.statusCode).toBe(200);
    let run = await read(runId);
    for (let i = 0; i < 10 && run.status === 'running'; i++) run = await read(runId, 30_000);
    expect(run).toMatchObject({ status: 'completed', output: 'after: answer: accept {"name":"Ada"}', pendingInputs: [] });
    only.kill('SIGTERM');
    await exited(only);
  }, 240_000);

  test('ends when that worker dies: the LLM reads that the call failed, the question is closed, the run completes and is no longer listed as waiting', async () => {
    const first = h.worker();
    const { runId, inputId } = await askingRun();
    await waitFor(() => listedAsWaiting(h.app, runId), 30_000, 'the run listed as waiting');

    first.kill('SIGKILL');
    await exited(first);
    h.worker();

    let run = await read(runId);
    for (let i = 0; i < 10 && run.status === 'running'; i++) run = await read(runId, 30_000);
    expect(run.status).toBe('completed');
    expect(run.output).toMatch(/^after: MCP tool execution failed unexpectedly: /);
    expect(run.toolCalls).toEqual([expect.objectContaining({ status: 'error' })]);
    expect(run.pendingInputs).toEqual([]);
    const late = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'decline' } });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ code: 'input_closed' });
    // The activity that said it waits died: its end, not a signal of its own, unlists the run.
    await waitFor(async () => !(await listedAsWaiting(h.app, runId)), 30_000, 'the run no longer listed as waiting');
  }, 240_000);
});
