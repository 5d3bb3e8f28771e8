import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { listToolCalls } from '../../store/runs/tool-calls';
import { insertThread } from '../../store/threads/threads';
import { startEngine, type Engine } from '../support/engine';
import { ROOT, exited, processesWith, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const RUNS = 30;

describe('workers scaled out on one task queue', () => {
  let engine: Engine;
  const workers: ChildProcess[] = [];
  const marker = `--marker=${randomUUID()}`;

  beforeAll(async () => {
    engine = await startEngine('embedded', { worker: false });
  });
  afterAll(async () => {
    for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    await Promise.all(workers.map(exited));
    for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL');
    await engine.close();
  });

  test('30 concurrent MCP runs survive a worker killed mid-flight, without duplicate calls or orphaned servers', async () => {
    const countFile = path.join(testStack().tmpDir, `multi-count-${randomUUID()}`);
    const integration = await insertIntegration(engine.db, {
      name: `counter-${randomUUID().slice(0, 8)}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, marker], cwd: ROOT, env: { COUNT_FILE: countFile } },
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${integration.name}__count`, arguments: {} }], delayMs: 300 },
        { text: 'counted: {{tool_results}}', delayMs: 300 },
      ] },
    });
    const env = { DATABASE_URL: testStack().databases.embedded, TASK_QUEUE: engine.taskQueue };
    for (let i = 0; i < 3; i++) workers.push(spawnWorker(env));

    const runIds = await Promise.all(Array.from({ length: RUNS }, async () => {
      const thread = await insertThread(engine.db, agent.id);
      return engine.start({ threadId: thread.id, input: 'count once' });
    }));
    // Kill a worker while runs are in every stage: some done, some mid-turn, some not started.
    await waitFor(async () => {
      const { rows } = await engine.db.query<{ n: number }>('SELECT count(*)::int AS n FROM run_results WHERE run_id = ANY($1)', [runIds]);
      return rows[0].n >= 3;
    }, 120_000, 'the first runs to finish');
    workers[0].kill('SIGKILL');
    await exited(workers[0]);

    const results = await Promise.all(runIds.map((id) => engine.result(id)));
    expect(results.map((r) => r.status)).toEqual(runIds.map(() => 'completed'));

    // Each run made one count call. A call cut off by the kill ran at most once (non-idempotent tools get one attempt).
    const calls = (await Promise.all(runIds.map((id) => listToolCalls(engine.db, id)))).flat();
    expect(calls).toHaveLength(RUNS);
    const ok = calls.filter((c) => c.status === 'ok').length;
    const counted = fs.existsSync(countFile) ? fs.readFileSync(countFile, 'utf8').length : 0;
    expect(counted).toBeLessThanOrEqual(RUNS);
    expect(counted).toBeGreaterThanOrEqual(ok);
    expect(ok).toBeGreaterThan(RUNS / 2);

    // The survivors sweep away the dead worker's servers; stopping them closes their own.
    for (const w of workers.slice(1)) w.kill('SIGTERM');
    await Promise.all(workers.map(exited));
    await waitFor(async () => processesWith(marker).length === 0, 30_000, 'no MCP server processes left');
  });
});
