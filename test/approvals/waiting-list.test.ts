import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { waitFor } from '../support/wait';
import { listedAsWaiting } from '../support/waiting-list';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const WAIT_MS = 60_000;

/*
 * GET /v1/runs?waiting=true (and `agent-engine approvals list`, which reads it) finds runs by the
 * WaitingForApproval search attribute. It was set only when a call found itself the only one
 * waiting, so a turn whose calls all waited at once was never listed, and they timed out unseen.
 */
describe('a run whose turn has several calls waiting for approval is listed as waiting', () => {
  let api: ApiEngine;

  beforeAll(async () => {
    api = await startApiEngine();
  });
  afterAll(async () => {
    await stopApiEngine(api);
  });

  const listed = (runId: string) => listedAsWaiting(api.app, runId);
  const pending = async (runId: string) =>
    (await api.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingApprovals: unknown[] }>().pendingApprovals.length;

  test.each([
    ['two calls, decided in order', 2, [1, 2]],
    ['two calls, decided last first', 2, [2, 1]],
    ['three calls, decided in order', 3, [1, 2, 3]],
    ['three calls, decided out of order', 3, [3, 1, 2]],
  ])('%s: listed while any waits, and no longer once all are decided', async (_name, calls, order) => {
    const fx = await insertIntegration(api.engine.db, {
      name: `fx-${randomUUID().slice(0, 8)}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
      approval: { default: 'always' },
    });
    const agent = await insertAgent(api.engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fx.id],
      model: {
        provider: 'scripted',
        script: [{ toolCalls: Array.from({ length: calls }, (_, i) => ({ name: `${fx.name}__echo`, arguments: { text: `t${i + 1}` } })) }, { text: 'done' }],
      },
    });
    const runId = await api.engine.start({ threadId: (await insertThread(api.engine.db, agent.id)).id, input: 'go' });
    await waitFor(async () => (await pending(runId)) === calls, WAIT_MS, `${calls} pending approvals`);
    await waitFor(() => listed(runId), WAIT_MS, 'the run listed as waiting');

    for (const [i, n] of order.entries()) {
      const decided = await api.app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_${n}`, payload: { decision: i % 2 ? 'deny' : 'approve' } });
      expect(decided.statusCode).toBe(200);
      if (i < order.length - 1) expect(await listed(runId)).toBe(true);
    }
    await waitFor(async () => !(await listed(runId)), WAIT_MS, 'the run no longer listed as waiting');
    expect(await api.engine.result(runId)).toMatchObject({ status: 'completed', output: 'done' });
  });
});
