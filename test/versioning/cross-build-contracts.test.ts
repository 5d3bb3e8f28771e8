import { randomUUID } from 'node:crypto';
import path from 'node:path';
import fs from 'node:fs';
import { RUN_WORKFLOW_TYPE } from '../../core/run';
import { DECIDE_APPROVAL_UPDATE } from '../../core/approval';
import { insertRunOnThread } from '../../store/runs/lifecycle';
import { startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { findStoredRun } from '../../store/runs/stored-runs';

/** The continue-as-new input a build of the engine wrote, as committed with its history. */
function recordedContinuation(): { runId: string; continueAsNewAtHistoryBytes?: number; continued: Record<string, unknown> & { run: { context: Record<string, unknown> } } } {
  const history = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'runs', 'histories', 'continued-as-new.json'), 'utf8'));
  const event = history.events.find((e: Record<string, unknown>) => e.workflowExecutionContinuedAsNewEventAttributes);
  const payload = event.workflowExecutionContinuedAsNewEventAttributes.input.payloads[0];
  return JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8'));
}

/**
 * What one build hands another, and what the API (deployed apart) sends the workflows: the new
 * build reads a continuation an older build wrote, and accepts an approval update as an older API
 * sent it. Real Temporal dev server and PostgreSQL.
 */
describe('contracts across builds', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await startEngine('embedded');
  });
  afterAll(async () => {
    await engine?.close();
  });

  test('a run goes on from the continuation an older build wrote (before llmSteps, startedAtMs and upgradedFrom existed)', async () => {
    const recorded = recordedContinuation();
    expect(Object.keys(recorded.continued).sort()).toEqual(['eventSeq', 'lastTextPreview', 'run', 'toolCallCount', 'turns', 'usage']);
    // The recorded run's third turn, on this database: the script's step 2 (no step cursor: the turns so far).
    const { agent, threadId } = await engine.scriptedThread([{ text: 'turn 1' }, { text: 'turn 2' }, { text: 'went on from an older build' }]);
    const runId = `run_${randomUUID().replace(/-/g, '')}`;
    await insertRunOnThread(engine.db, { runId, threadId, input: 'go' });
    const continued = { ...recorded.continued, run: { ...recorded.continued.run, context: { ...recorded.continued.run.context, threadId, agentId: agent.id } } };
    await engine.client.workflow.start(RUN_WORKFLOW_TYPE, {
      workflowId: runId, taskQueue: engine.taskQueue, args: [{ runId, continued }],
    });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'went on from an older build', turns: 3 });
    // The usage the older build carried over is kept.
    expect(result.usage.inputTokens).toBeGreaterThanOrEqual(33);
    expect(result.usage.outputTokens).toBeGreaterThanOrEqual(24);
  });

  test('an approval update in the shape the first API sent (no keyKind) is accepted', async () => {
    const integration = await insertFixtureIntegration(engine.db, { approval: { default: 'always' } });
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'approved by an older API' } }] },
      { text: '{{tool_results}}' },
    ], { integrationIds: [integration.id] });
    const runId = await engine.start({ threadId, input: 'go' });
    await waitFor(async () => (await findStoredRun(engine.db, runId))?.mayWait.approvals === true, 30_000, 'the approval to be pending');
    const { rows } = await engine.db.query<{ tool_call_id: string }>("SELECT tool_call_id FROM run_approvals WHERE run_id = $1 AND status = 'pending'", [runId]);
    await engine.client.workflow.getHandle(runId).executeUpdate(DECIDE_APPROVAL_UPDATE, { args: [{ toolCallId: rows[0].tool_call_id, decision: 'approve' }] });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'echo: approved by an older API' });
  });
});
