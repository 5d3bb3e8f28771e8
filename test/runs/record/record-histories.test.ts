import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { insertAgent } from '../../../store/agents';
import { insertIntegration } from '../../../store/integrations/integrations';
import { insertThread } from '../../../store/threads/threads';
import { startEngine, type Engine } from '../../support/engine';
import { ROOT } from '../../support/processes';
import { testStack } from '../../support/stack-env';

/**
 * Records the histories that test/runs/replay.test.ts replays: `npm run record-histories`.
 * A history already in test/runs/histories/ is kept as it is: old histories are what prove that
 * today's workflow still replays runs started by older code. Add a scenario for new paths.
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
    const file = path.join(HISTORIES_DIR, `${name}.json`);
    if (await fs.stat(file).then(() => true, () => false)) return;
    // The CLI writes the same JSON that `temporal workflow show` gives users (and that replay reads).
    const stack = testStack();
    const { stdout } = await promisify(execFile)(stack.temporalCliPath, [
      'workflow', 'show', '--address', stack.temporalAddress, '-w', workflowId, ...(runId ? ['-r', runId] : []), '--output', 'json',
    ], { maxBuffer: 64 * 1024 * 1024 });
    await fs.writeFile(file, stdout);
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

  // MCP: a tool, a CSV resource and a prompt in one turn.
  const integration = await insertIntegration(engine.db, {
    name: `fixture${Date.now()}`,
    transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts')], cwd: ROOT },
  });
  const agent = await insertAgent(engine.db, {
    name: `mcp-history-${Date.now()}`, integrationIds: [integration.id],
    model: { provider: 'scripted', script: [
      { toolCalls: [
        { name: `${integration.name}__echo`, arguments: { text: 'hi' } },
        { name: 'retrieve_mcp_resource', arguments: { integrationId: integration.name, resourceUri: 'fixture://data/sales.csv' } },
        { name: 'retrieve_mcp_prompt', arguments: { integrationId: integration.name, promptName: 'greeting' } },
      ] },
      { text: 'done' },
    ] },
  });
  const thread = await insertThread(engine.db, agent.id);
  const r4 = await engine.start({ threadId: thread.id, input: 'use MCP' });
  expect((await engine.result(r4)).toolCalls.map((c) => c.status)).toEqual(['ok', 'ok', 'ok']);
  await save('mcp-tool-resource-prompt', r4);

  // A turn with more calls than limits.maxToolCallsPerTurn, in the first turn (run by prepareRun) and in a later one.
  const calls = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `t${i}`, arguments: {} }));
  const limited = await insertAgent(engine.db, {
    name: `per-turn-history-${Date.now()}`, limits: { maxToolCallsPerTurn: 1 },
    model: { provider: 'scripted', script: [{ toolCalls: calls(3) }, { toolCalls: calls(2) }, { text: 'done' }] },
  });
  const r5 = await engine.start({ threadId: (await insertThread(engine.db, limited.id)).id, input: 'too many calls' });
  expect((await engine.result(r5)).toolCalls).toHaveLength(5);
  await save('tool-calls-per-turn', r5);
});
