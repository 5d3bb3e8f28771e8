import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { RunWorkflowInput } from '../../workflows/definitions';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import type { ScriptStep } from '../../core/agent-model';
import { makeBuildCurrent } from '../../platform/temporal/deployments';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { clusterDescribe, startTemporalCluster, type TemporalCluster } from '../support/temporal-cluster';
import { waitFor } from '../support/wait';
import { insertFixtureIntegration } from '../support/fixture-integration';

/** Build B: the engine's workflows with a change that build A's histories cannot replay (a timer first). */
const CHANGED_WORKFLOWS = require.resolve('../fixtures/nondeterministic-workflows');
type History = temporal.api.history.v1.IHistory;

/**
 * A deploy under waiting runs, on a real Temporal server (the one Worker Versioning's upgrade on
 * continue-as-new needs): runs wait for approval on build A; build B, whose workflow code A's
 * histories cannot replay, becomes current; the approvals are decided; every run ends on B and
 * none fails with nondeterminism. A run whose turn is under way finishes that turn on A first.
 */
clusterDescribe('a deploy under waiting runs', () => {
  const deployment = `engine-${randomUUID().slice(0, 8)}`;
  const A = { deploymentName: deployment, buildId: 'build-a' };
  const B = { deploymentName: deployment, buildId: 'build-b' };
  let cluster: TemporalCluster;
  let a: ApiEngine;
  let b: Engine | undefined;

  beforeAll(async () => {
    cluster = await startTemporalCluster(path.join(testStack().tmpDir, `cluster-${randomUUID().slice(0, 8)}`));
    a = await startApiEngine('external', { rateLimitPerMinute: 0 }, { temporalAddress: cluster.address, version: A });
    await makeBuildCurrent(a.engine.client, A, { timeoutMs: 150_000 });
  }, 240_000);
  afterAll(async () => {
    await b?.close();
    if (a) await stopApiEngine(a);
    await cluster?.stop();
  });

  const read = async (runId: string) => (await a.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json();
  async function start(integrationId: string, script: ScriptStep[]): Promise<string> {
    const agent = await insertAgent(a.engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: [integrationId] });
    return a.engine.start({ threadId: (await insertThread(a.engine.db, agent.id)).id, input: 'go' });
  }
  /**
   * Every execution of a run, oldest first, by their histories: from the latest back through each
   * start's continuedExecutionRunId (visibility, eventually consistent, may not list them all yet).
   */
  async function executions(runId: string): Promise<History[]> {
    const chain: History[] = [];
    let execution: string | undefined;
    do {
      const history = await a.engine.client.workflow.getHandle(runId, execution).fetchHistory();
      chain.unshift(history);
      execution = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    } while (execution);
    return chain;
  }
  const builds = (history: History) => [...new Set((history.events ?? [])
    .map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId).filter(Boolean))];

  test('runs waiting for approval on build A end on build B, which A\'s histories cannot replay; a turn under way ends on A first', async () => {
    const guarded = await insertFixtureIntegration(a.engine.db, { approval: { default: 'always' } });
    const open = await insertFixtureIntegration(a.engine.db);
    const waiting = await Promise.all([1, 2, 3].map((n) => start(guarded.id, [
      { toolCalls: [{ name: `${guarded.name}__echo`, arguments: { text: `approved ${n}` } }] },
      { text: '{{tool_results}}' },
    ])));
    for (const runId of waiting) await waitFor(async () => (await read(runId)).pendingApprovals.length === 1, 60_000, `${runId} to wait for approval`);
    // Build B's worker polls the same queue; it is not current yet.
    b = await startEngine('external', { temporalAddress: cluster.address, version: B, workflowsPath: CHANGED_WORKFLOWS, taskQueue: a.engine.taskQueue });
    // A turn of 40 s, under way when B becomes current (even on a loaded machine, where the change
    // can take tens of seconds to reach the task queues).
    const midTurn = await start(open.id, [
      { toolCalls: [{ name: `${open.name}__echo`, arguments: { text: 'mid-turn' } }], delayMs: 40_000 },
      { text: '{{tool_results}}' },
    ]);
    await waitFor(async () => (await a.engine.db.query('SELECT 1 FROM run_turns WHERE run_id = $1', [midTurn])).rowCount === 1, 30_000, 'its first turn to start');
    // It returns once the change reached the task queues: a run woken before that would not be told to move.
    await makeBuildCurrent(a.engine.client, B, { timeoutMs: 150_000 });
    const turnOne = await a.engine.db.query('SELECT completed_at FROM run_turns WHERE run_id = $1 AND turn = 1', [midTurn]);
    expect({ turnOneUnderWayWhenBIsCurrent: turnOne.rows[0]?.completed_at === null }).toEqual({ turnOneUnderWayWhenBIsCurrent: true });
    for (const runId of waiting) {
      const [pending] = (await read(runId)).pendingApprovals;
      const decided = await a.app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${pending.toolCallId}`, payload: { decision: 'approve' } });
      expect(decided.statusCode).toBe(200);
    }
    const ends = await Promise.all([...waiting, midTurn].map((runId) => a.engine.result(runId)));
    expect(ends.map((r) => [r.status, r.output])).toEqual([
      ['completed', 'echo: approved 1'], ['completed', 'echo: approved 2'], ['completed', 'echo: approved 3'], ['completed', 'echo: mid-turn'],
    ]);
    for (const runId of [...waiting, midTurn]) {
      const histories = await executions(runId);
      // Never a failed workflow task (nondeterminism would fail B's tasks of A's histories).
      for (const h of histories) expect((h.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
      // The first execution ran on A, and its turn 1 with it; the run continued as new onto B, where it ended.
      expect(histories.length).toBe(2);
      expect(builds(histories[0])).toEqual(['build-a']);
      expect(builds(histories[1])).toEqual(['build-b']);
      // The continuation says which build it left: B, still told the target changed, would not move again (upgradeDueOn).
      const started = histories[1].events?.[0]?.workflowExecutionStartedEventAttributes;
      expect(defaultPayloadConverter.fromPayload<RunWorkflowInput>(started!.input!.payloads![0])).toMatchObject({ continued: { upgradedFrom: 'build-a' } });
      const firstTimer = (histories[1].events ?? []).find((e) => e.timerStartedEventAttributes || e.activityTaskScheduledEventAttributes);
      expect(firstTimer?.timerStartedEventAttributes).toBeTruthy();
      expect((await read(runId)).version).toEqual({ deployment, buildId: 'build-b' });
    }
    const turnsOnA = (await executions(midTurn))[0].events?.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'llmTurn'
      || e.activityTaskScheduledEventAttributes?.activityType?.name === 'prepareRun').length;
    expect(turnsOnA).toBe(1);
  }, 300_000);
});
