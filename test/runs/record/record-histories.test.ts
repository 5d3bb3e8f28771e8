import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { insertAgent } from '../../../store/agents';
import { insertIntegration } from '../../../store/integrations/integrations';
import { insertThread } from '../../../store/threads/threads';
import { pendingBudgetRequest } from '../../../store/budget-requests';
import { DECIDE_BUDGET_UPDATE } from '../../../core/budget-ask';
import { CALLER_TOOL_ANSWERED_SIGNAL } from '../../../core/caller-tools';
import { answerCallerToolCall, pendingCallerToolCalls } from '../../../store/caller-tools';
import { EVAL_WORKFLOW_TYPE } from '../../../core/eval';
import { tenantIdKey } from '../../../core/search-attributes';
import { DEFAULT_TENANT_ID } from '../../../core/tenancy';
import { insertEval } from '../../../store/evals/evals';
import { SearchAttributeGuard } from '../../../platform/temporal/search-attributes';
import { operatorCaller } from '../../../use-cases/caller';
import { replayRun } from '../../../use-cases/runs/replay-run';
import { waitFor } from '../../support/wait';
import { logger, startEngine, type Engine } from '../../support/engine';
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

  // A reached limit that asks a person (limits.onLimit "ask"), raised through the workflow's update.
  const asking = await insertAgent(engine.db, {
    name: `budget-history-${Date.now()}`, limits: { maxToolCalls: 1, onLimit: 'ask' },
    model: { provider: 'scripted', script: [{ toolCalls: calls(2) }, { text: 'done' }] },
  });
  const r6 = await engine.start({ threadId: (await insertThread(engine.db, asking.id)).id, input: 'ask for more' });
  let pending: Awaited<ReturnType<typeof pendingBudgetRequest>>;
  await waitFor(async () => Boolean(pending = await pendingBudgetRequest(engine.db, r6)), 30_000, 'the run to ask');
  await engine.client.workflow.getHandle(r6).executeUpdate(DECIDE_BUDGET_UPDATE, { args: [{ seq: pending!.seq, decision: { add: { maxToolCalls: 1 } } }] });
  expect((await engine.result(r6)).toolCalls).toHaveLength(2);
  await save('budget-ask', r6);

  // Two calls of the caller's tools in one turn, waiting together, answered in reverse order (the answer in PostgreSQL, its id signalled).
  const callers = await insertAgent(engine.db, {
    name: `caller-tools-history-${Date.now()}`,
    model: { provider: 'scripted', script: [{ toolCalls: [{ name: 'ask_a', arguments: {} }, { name: 'ask_b', arguments: {} }] }, { text: '{{tool_results}}' }] },
  });
  const callerTools = ['ask_a', 'ask_b'].map((name) => ({ name, inputSchema: { type: 'object' } }));
  const r7 = await engine.start({ threadId: (await insertThread(engine.db, callers.id)).id, input: 'ask the caller', callerTools });
  await waitFor(async () => (await pendingCallerToolCalls(engine.db, r7)).length === 2, 30_000, 'both calls to wait');
  for (const toolCallId of ['call_1_2', 'call_1_1']) {
    await answerCallerToolCall(engine.db, r7, toolCallId, { content: [{ type: 'text', text: toolCallId }], isError: false }, null);
    await engine.client.workflow.getHandle(r7).signal(CALLER_TOOL_ANSWERED_SIGNAL, { toolCallId });
  }
  expect((await engine.result(r7)).output).toBe('call_1_1\ncall_1_2');
  await save('caller-tools', r7);

  // A replay of the MCP run (recorded-then-live), on an agent whose first call the original made and whose second it did not:
  // matched, then answered from the recording and run live in one turn.
  const replaying = await insertAgent(engine.db, {
    name: `replay-history-${Date.now()}`,
    model: { provider: 'scripted', script: [
      { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'hi' } }, { name: `${integration.name}__echo`, arguments: { text: 'live' } }] },
      { text: '{{tool_results}}' },
    ] },
  });
  const deps = {
    db: engine.db, client: engine.client, taskQueue: engine.taskQueue, llmKeyEnvs: [],
    searchAttributes: new SearchAttributeGuard(engine.client.connection, engine.client.options.namespace, logger),
  };
  const { run: r8 } = await replayRun(deps, operatorCaller(), { runId: r4, tools: 'recorded-then-live', agentId: replaying.id });
  expect((await engine.result(r8.id)).toolCalls.map((c) => c.replayed ?? null)).toEqual(['recorded', null]);
  await save('replay', r8.id);

  // An eval: two runs replayed with recorded results (its replays are child workflows), a thread's runs in order, then scored.
  const evalId = `evl_history${Date.now()}`;
  await insertEval(engine.db, {
    id: evalId, tenantId: DEFAULT_TENANT_ID, name: 'history', tools: 'recorded', agentId: null, model: null,
    startedBy: { principalId: 'operator', name: 'operator' },
    runs: [{ originalRunId: r1, group: 0, expect: { maxTurns: 3 } }, { originalRunId: r4, group: 1, expect: { toolsCalled: ['a'] } }],
  });
  await engine.client.workflow.start(EVAL_WORKFLOW_TYPE, {
    workflowId: evalId, taskQueue: engine.taskQueue, args: [{ evalId }], typedSearchAttributes: [{ key: tenantIdKey, value: DEFAULT_TENANT_ID }],
  });
  expect(await engine.client.workflow.getHandle(evalId).result()).toMatchObject({ status: 'completed', runs: 2, passed: 1 });
  await save('eval', evalId);
});
