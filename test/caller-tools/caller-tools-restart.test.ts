import { randomUUID } from 'node:crypto';
import type { RunView } from '../../core/run-view';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { restartableTemporal } from '../support/restartable-temporal';
import { waitFor } from '../support/wait';

const WAIT_MS = 90_000;

/**
 * A run waiting for its caller's tools holds nothing but its workflow's state in Temporal and its
 * calls in PostgreSQL: the caller that started it goes away, every process crashes (the worker and
 * the Temporal server by SIGKILL, the API dropped), and another client, on the API started again,
 * answers the call still waiting; the run goes on to its answer with both results.
 */
describe('a run waiting for its caller through a crash of every process', () => {
  const h = restartableTemporal('callers');

  test('an answer given before the crash stands, and another client answers the other call after it', async () => {
    const tool = (name: string) => ({ name, inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } });
    const agent = await insertAgent(h.db, {
      name: `callers-crash-${randomUUID().slice(0, 8)}`,
      model: {
        provider: 'scripted',
        script: [{ toolCalls: [{ name: 'ask_a', arguments: { q: 'one' } }, { name: 'ask_b', arguments: { q: 'two' } }] }, { text: '{{tool_results}}' }],
      },
    });
    const thread = await insertThread(h.db, agent.id);
    const started = await h.app.inject({
      method: 'POST', url: `/v1/threads/${thread.id}/runs`, payload: { input: 'go', callerTools: [tool('ask_a'), tool('ask_b')] },
    });
    expect(started.statusCode).toBe(202);
    const runId = started.json<{ id: string }>().id;
    const read = async () => (await h.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<RunView>();
    await waitFor(async () => (await read()).pendingCallerTools.length === 2, WAIT_MS, 'both calls to wait for the caller');
    const first = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/tool-results/call_1_1`, payload: { content: 'A' } });
    expect(first.statusCode).toBe(202);
    await waitFor(async () => (await read()).pendingCallerTools.length === 1, WAIT_MS, 'the first call answered');

    await h.crashAll();
    // Another client, on the API as it started again: the call still waits, read from PostgreSQL.
    expect(await read()).toMatchObject({ status: 'running', pendingCallerTools: [{ toolCallId: 'call_1_2', name: 'ask_b', arguments: { q: 'two' } }] });
    const second = await h.app.inject({
      method: 'POST', url: `/v1/runs/${runId}/tool-results/call_1_2`, payload: { content: [{ type: 'text', text: 'B' }] },
    });
    expect(second.statusCode).toBe(202);
    await waitFor(async () => (await read()).status !== 'running', WAIT_MS, 'the run to end');
    expect(await read()).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'A\nB', pendingCallerTools: [] });
  }, 240_000);
});
