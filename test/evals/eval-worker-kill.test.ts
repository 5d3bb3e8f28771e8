import { randomUUID } from 'node:crypto';
import type { EvalView } from '../../core/eval-view';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { exited } from '../support/processes';
import { waitFor } from '../support/wait';
import { workerProcesses } from '../support/worker-processes';

/*
 * An eval is durable: its worker is SIGKILLed while replays run, another worker takes over, and
 * the eval completes with each run replayed exactly once (the replays' run ids derive from the
 * eval's, and each is started once, as a child workflow of the eval's).
 */

const WAIT_MS = 150_000;

describe('a worker killed during an eval', () => {
  const h = workerProcesses();

  test('the eval completes, each run replayed once', async () => {
    const first = h.worker();
    const agent = await insertAgent(h.engine.db, {
      name: `eval-kill-${randomUUID().slice(0, 8)}`,
      model: { provider: 'scripted', script: [{ text: 'thinking', delayMs: 1_500 }] },
    });
    const runIds = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
      const thread = await insertThread(h.engine.db, agent.id);
      return h.engine.start({ threadId: thread.id, input: `run ${i}` });
    }));
    for (const runId of runIds) expect(await h.engine.result(runId)).toMatchObject({ status: 'completed' });

    const started = await h.app.inject({
      method: 'POST', url: '/v1/evals', payload: { name: 'kill', runIds, tools: 'recorded', expect: { outputContains: 'thinking' } },
    });
    expect(started.statusCode).toBe(202);
    const evalId: string = started.json().id;
    const replays = async () => (await h.engine.db.query<{ id: string }>('SELECT id FROM runs WHERE eval_id = $1', [evalId])).rows;
    // Mid-eval: some replays are recorded, and not all have been scored.
    await waitFor(async () => (await replays()).length >= 2, WAIT_MS, 'replays to start');
    first.kill('SIGKILL');
    await exited(first);
    // Killed mid-eval: replays were left to start, by the next worker.
    const atKill = await replays();
    expect(atKill.length).toBeLessThan(6);
    h.worker();

    const read = async () => (await h.app.inject({ method: 'GET', url: `/v1/evals/${evalId}` })).json<EvalView>();
    await waitFor(async () => (await read()).status !== 'running', WAIT_MS, 'the eval to end');
    const view = await read();
    expect(view).toMatchObject({ status: 'completed', totals: { runs: 6, scored: 6, passed: 6, failed: 0 } });
    const recorded = await replays();
    expect(recorded).toHaveLength(6);
    expect(new Set(view.runs.map((r) => r.replayRunId))).toEqual(new Set(recorded.map((r) => r.id)));
    // One workflow per replay: none was started twice under another id.
    const children = async () => {
      const ids: string[] = [];
      for await (const w of h.engine.client.workflow.list({ query: `ParentWorkflowId = '${evalId}'` })) ids.push(w.workflowId);
      return ids.sort();
    };
    await waitFor(async () => (await children()).length >= 6, 30_000, 'the replays in visibility');
    expect(await children()).toEqual(recorded.map((r) => r.id).sort());
  }, WAIT_MS * 2);
});
