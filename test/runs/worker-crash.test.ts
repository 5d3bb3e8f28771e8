import type { ChildProcess } from 'node:child_process';
import { runTurns } from '../../store/runs/turns';
import { startEngine, type Engine } from '../support/engine';
import { exited, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

describe('a worker killed mid-run', () => {
  const workerEnv = () => ({ DATABASE_URL: testStack().databases.embedded, TASK_QUEUE: engine.taskQueue });
  let engine: Engine;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    engine = await startEngine('embedded', { worker: false });
  });
  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await exited(c);
    }
    await engine.close();
  });

  test('a restarted worker finishes the run without re-running completed LLM turns', async () => {
    const steps = Array.from({ length: 6 }, (_, i) => ({ toolCalls: [{ name: `tick_${i + 1}`, arguments: {} }], delayMs: 600 }));
    const { threadId } = await engine.scriptedThread([...steps, { text: 'all done' }]);
    const first = spawnWorker(workerEnv());
    children.push(first);
    const runId = await engine.start({ threadId, input: 'count' });

    await waitFor(async () => (await runTurns(engine.db, runId)).filter((t) => t.completed).length >= 3, 60_000, 'three turns');
    first.kill('SIGKILL');
    await exited(first);
    const doneAtKill = (await runTurns(engine.db, runId)).filter((t) => t.completed).map((t) => t.turn);

    children.push(spawnWorker(workerEnv()));
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'all done', turns: 7 });
    expect(result.toolCalls.map((c) => c.name)).toEqual(steps.map((_, i) => `tick_${i + 1}`));

    const turns = await runTurns(engine.db, runId);
    expect(turns.map((t) => t.turn)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Turns that had finished before the kill ran exactly once; only the turn in flight may have run twice.
    const attempts = new Map(turns.map((t) => [t.turn, t.attempts]));
    for (const turn of doneAtKill) expect(attempts.get(turn)).toBe(1);
    expect(turns.filter((t) => t.attempts > 1).length).toBeLessThanOrEqual(1);
    expect(Math.max(...turns.map((t) => t.attempts))).toBeLessThanOrEqual(2);
    expect(doneAtKill.length).toBeGreaterThanOrEqual(3);
  });
});
