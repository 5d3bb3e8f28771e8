import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PriceTable } from '../../core/pricing';
import type { RunView } from '../../core/run-view';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { restartableTemporal } from '../support/restartable-temporal';
import { waitFor } from '../support/wait';

const WAIT_MS = 90_000;
const PRICES: PriceTable = { scripted: { scripted: { inputPerMillion: 3, outputPerMillion: 15 } } };
const dir = mkdtempSync(path.join(os.tmpdir(), 'budget-crash-'));
const pricesFile = path.join(dir, 'prices.json');
writeFileSync(pricesFile, JSON.stringify(PRICES));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A run waiting for budget holds nothing but its workflow's state in Temporal and its request in
 * PostgreSQL: the worker and the Temporal server are killed (SIGKILL) and the API restarted while it
 * waits, and the run still waits, still listed, and goes on once a person raises its budget.
 */
describe('a run waiting for budget through a crash of every process', () => {
  const h = restartableTemporal('budget', { workerEnv: { PRICES_FILE: pricesFile }, app: { prices: PRICES } });

  test('it waits on after the crash, and the raise sent afterwards lets it answer', async () => {
    const agent = await insertAgent(h.db, {
      name: `budget-crash-${randomUUID().slice(0, 8)}`, limits: { maxCostUsd: 0.000001, onLimit: 'ask' },
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: 'no_such_tool', arguments: {} }] }, { text: 'after the crash' }] },
    });
    const thread = await insertThread(h.db, agent.id);
    const started = await h.app.inject({ method: 'POST', url: `/v1/threads/${thread.id}/runs`, payload: { input: 'go' } });
    expect(started.statusCode).toBe(202);
    const runId = started.json<{ id: string }>().id;
    const read = async () => (await h.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<RunView>();
    await waitFor(async () => (await read()).pendingBudget !== null, WAIT_MS, 'the run to wait for budget');
    const before = (await read()).pendingBudget;

    await h.crashAll();
    expect(await read()).toMatchObject({ status: 'running', pendingBudget: before });

    // Until the new worker polls, an answer may find no worker to take it (503); one that got through answers 409 after.
    let status = 0;
    await waitFor(async () => {
      const res = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/budget`, payload: { add: { maxCostUsd: 1 } } });
      status = res.statusCode;
      return res.statusCode === 200 || res.statusCode === 409;
    }, WAIT_MS, 'the raise to be taken');
    expect([200, 409]).toContain(status);
    await waitFor(async () => (await read()).status !== 'running', WAIT_MS, 'the run to end');
    expect(await read()).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'after the crash', pendingBudget: null });
  }, 240_000);
});
