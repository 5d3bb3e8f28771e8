import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';

/**
 * Refreshes the committed histories that test/replay.test.ts replays: `npm run record-histories`.
 * Run it when the workflow's command sequence changes on purpose (behind patched()).
 */
const HISTORIES_DIR = path.join(__dirname, '..', 'histories');

let engine: Engine;
beforeAll(async () => {
  engine = await startEngine('embedded');
});
afterAll(async () => {
  await engine.close();
});

test('records histories of the run workflow', async () => {
  await fs.mkdir(HISTORIES_DIR, { recursive: true });
  const save = async (name: string, workflowId: string, runId?: string) => {
    // The CLI writes the same JSON that `temporal workflow show` gives users (and that replay reads).
    const stack = testStack();
    const { stdout } = await promisify(execFile)(stack.temporalCliPath, [
      'workflow', 'show', '--address', stack.temporalAddress, '-w', workflowId, ...(runId ? ['-r', runId] : []), '--output', 'json',
    ], { maxBuffer: 64 * 1024 * 1024 });
    await fs.writeFile(path.join(HISTORIES_DIR, `${name}.json`), stdout);
  };
  const three = await engine.scriptedThread([
    { toolCalls: [{ name: 'a', arguments: {} }] },
    { toolCalls: [{ name: 'b', arguments: {} }, { name: 'c', arguments: {} }] },
    { text: 'done {{tool_results}}' },
  ]);
  const r1 = await engine.start({ threadId: three.threadId, input: 'three turns' });
  await engine.result(r1);
  await save('three-turns', r1);

  const can = await engine.scriptedThread([
    { toolCalls: [{ name: 'a', arguments: {} }] }, { toolCalls: [{ name: 'b', arguments: {} }] }, { text: 'done' },
  ]);
  const r2 = await engine.start({ threadId: can.threadId, input: 'continue as new', continueAsNewAtHistoryBytes: 1 });
  await engine.result(r2);
  const executions = [];
  for await (const e of engine.client.workflow.list({ query: `WorkflowId = '${r2}'` })) executions.push(e);
  const continued = executions.find((e) => e.status.name === 'CONTINUED_AS_NEW')!;
  await save('continued-as-new', r2, continued.runId);

  const cancelled = await engine.scriptedThread([{ toolCalls: [{ name: 'a', arguments: {} }] }, { text: 'never', delayMs: 60_000 }]);
  const r3 = await engine.start({ threadId: cancelled.threadId, input: 'cancel me' });
  await new Promise((r) => setTimeout(r, 1500));
  await engine.client.workflow.getHandle(r3).cancel();
  await engine.result(r3);
  await save('cancelled', r3);
});
