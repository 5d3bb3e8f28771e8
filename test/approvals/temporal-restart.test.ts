import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { restartableTemporal } from '../support/restartable-temporal';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const WAIT_MS = 90_000;

interface RunBody { status: string; output: string | null; pendingApprovals: { toolCallId: string }[] }

/**
 * A run waiting for approval holds nothing but its workflow's state in Temporal: the Temporal
 * server itself may restart meanwhile (its own dev server here, persisted in a file, so that the
 * suites sharing the global one are not disturbed), and the run goes on after the decision.
 */
describe('a run waiting for approval while the Temporal server restarts', () => {
  const suffix = randomUUID().slice(0, 8);
  const h = restartableTemporal('restart');

  test('the dev server runs at the niceness it was given, in every thread it has started', async () => {
    const pid = Number(await fs.readFile(path.join(h.options.dataDir, 'temporal.pid'), 'utf8'));
    // The pid is the server's own (`nice` execs it): its command line is the CLI's.
    expect(await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).toContain('start-dev');
    const tids = await fs.readdir(`/proc/${pid}/task`);
    expect(tids.length).toBeGreaterThan(1);
    // Field 19 of /proc/<pid>/task/<tid>/stat, counted after the command name's closing parenthesis.
    const niceness = async (tid: string) => {
      const stat = await fs.readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    };
    expect(new Set(await Promise.all(tids.map(niceness)))).toEqual(new Set([7]));
  });

  test('the decision, sent after the restart, lets the run go on to its answer', async () => {
    const fx = await insertIntegration(h.db, {
      name: `rs${suffix}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = await insertAgent(h.db, {
      name: `restart-${suffix}`, integrationIds: [fx.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'after' } }] }, { text: '{{tool_results}}' }] },
    });
    const thread = await insertThread(h.db, agent.id);
    const started = await h.app.inject({ method: 'POST', url: `/v1/threads/${thread.id}/runs`, payload: { input: 'go' } });
    expect(started.statusCode).toBe(202);
    const runId = started.json<{ id: string }>().id;
    const read = async () => (await h.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<RunBody>();
    await waitFor(async () => (await read()).pendingApprovals.length === 1, WAIT_MS, 'the call to wait for approval');

    const { before, after } = await h.restart();
    // The same port and database file: every process finds its server where it was.
    expect(after).toBe(before);
    expect((await read())).toMatchObject({ status: 'running', pendingApprovals: [{ toolCallId: 'call_1_1' }] });

    // The API's client and the worker reconnect by themselves; until the worker polls again a decision may answer 503.
    let decided = 0;
    await waitFor(async () => {
      const res = await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_1`, payload: { decision: 'approve' } });
      decided = res.statusCode;
      // A 409 naming "approve" is our own earlier attempt that got through.
      return res.statusCode === 200 || (res.statusCode === 409 && res.json<{ decision: string }>().decision === 'approve');
    }, WAIT_MS, 'the decision to be taken');
    expect([200, 409]).toContain(decided);
    await waitFor(async () => (await read()).status !== 'running', WAIT_MS, 'the run to end');
    expect(await read()).toMatchObject({ status: 'completed', output: 'echo: after', pendingApprovals: [] });
  }, 240_000);
});
