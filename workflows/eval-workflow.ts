import {
  CancellationScope, ParentClosePolicy, getExternalWorkflowHandle, isCancellation, proxyActivities, setWorkflowOptions, startChild,
  workflowInfo, type ChildWorkflowHandle, type Workflow,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { EvalReplayStart } from '../activities/eval-replays';
import { MAX_REPLAYS_AT_ONCE, replayGroups } from '../core/eval';
import { RUN_WORKFLOW_TYPE } from '../core/run';
import { runStartAttributes } from '../core/search-attributes';
import type { RunWorkflowInput } from './definitions';
import { describeFailure } from './failures';
import { tenantAttribute } from './tenant';
import { pinnedWhenVersioned } from './upgrade';

type Activities = ReturnType<typeof createActivities>;

/*
 * An eval (POST /v1/evals, docs/time-travel.md): replays its runs, then scores them. Each replay
 * is a run of its own, started here as a child workflow whose id is its run id; the run's rows are
 * written first by an activity, under an id derived from the eval's and the run's index, so a
 * retried activity or a worker killed mid-way never makes a replay twice. At most
 * MAX_REPLAYS_AT_ONCE replays run at once; a thread's runs replay one after the other, on one new
 * thread. History carries ids and counts only: outputs and expectations stay in PostgreSQL.
 */

export interface EvalWorkflowInput {
  evalId: string;
}

export interface EvalOutcome {
  status: 'completed' | 'failed';
  runs: number;
  passed: number;
  failed: number;
}

const retry = {
  initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 20, nonRetryableErrorTypes: ['EvalNotFound'],
};

/** Short writes and reads of our own database: a worker that dies in one is noticed in seconds, not minutes. */
const steps = proxyActivities<Activities>({ startToCloseTimeout: '30 seconds', retry });

/** The scoring searches each output with a time bound (up to MAX_EVAL_RUNS of them), heartbeating as it goes. */
const scoring = proxyActivities<Activities>({ startToCloseTimeout: '5 minutes', heartbeatTimeout: '20 seconds', retry });

export async function evalWorkflow(input: EvalWorkflowInput): Promise<EvalOutcome> {
  const { evalId } = input;
  try {
    const { groupOf } = await steps.planEval({ evalId });
    await replayAll(evalId, replayGroups(groupOf));
    const scored = await scoring.scoreEval({ evalId });
    return { status: 'completed', ...scored };
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => steps.endEval({ evalId, status: 'cancelled' }));
      throw err;
    }
    await steps.endEval({ evalId, status: 'failed', error: describeFailure(err) });
    return { status: 'failed', runs: 0, passed: 0, failed: 0 };
  }
}

setWorkflowOptions(pinnedWhenVersioned, evalWorkflow);

/** The groups side by side, at most MAX_REPLAYS_AT_ONCE at once; each group's replays in order. */
async function replayAll(evalId: string, groups: number[][]): Promise<void> {
  const waiting = [...groups];
  const lane = async () => {
    for (let group = waiting.shift(); group; group = waiting.shift()) {
      for (const index of group) await replay(evalId, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(MAX_REPLAYS_AT_ONCE, groups.length) }, lane));
}

/** The replay's run workflow input: a replay taking recorded results is told its original, and stops at a reached limit. */
const runInput = (start: EvalReplayStart): RunWorkflowInput => ({
  runId: start.runId, ...(start.discovers ? { discovers: true } : {}), ...(start.replay ? { replay: start.replay } : {}),
  ...(start.limits ? { limits: start.limits } : {}),
});

/**
 * One replay: its run recorded and its workflow started as a child, together, whatever happens
 * meanwhile (a replay's run never lacks its workflow); then awaited. A replay that fails is the
 * eval's finding, not its failure (its run records how it ended). Cancelling the eval cancels the
 * replay running, and waits for it to end; ABANDON leaves a replay running if the eval is
 * terminated, to end as any run does.
 */
async function replay(evalId: string, index: number): Promise<void> {
  const started = await CancellationScope.nonCancellable(() => startReplay(evalId, index));
  if (!started) return;
  try {
    await Promise.race([started.child.result(), CancellationScope.current().cancelRequested]);
  } catch (err) {
    if (!(isCancellation(err) && CancellationScope.current().consideredCancelled)) return;
    await CancellationScope.nonCancellable(async () => {
      await getExternalWorkflowHandle(started.runId).cancel().catch(() => undefined);
      await started.child.result().catch(() => undefined);
    });
    throw err;
  }
}

/** The replay's run, recorded, and its workflow started; undefined when it cannot be replayed. */
async function startReplay(evalId: string, index: number): Promise<{ runId: string; child: ChildWorkflowHandle<Workflow> } | undefined> {
  const start = await steps.startEvalReplay({ evalId, index });
  if (!start) return undefined;
  const child = await startChild(RUN_WORKFLOW_TYPE, {
    workflowId: start.runId, args: [runInput(start)],
    taskQueue: workflowInfo().taskQueue,
    parentClosePolicy: ParentClosePolicy.ABANDON,
    typedSearchAttributes: runStartAttributes({
      threadId: start.threadId, agentId: start.agentId, tenantId: String(tenantAttribute().value),
    }),
    staticSummary: start.summary,
    staticDetails: `replay of run ${start.originalRunId} in eval ${evalId}`,
  });
  return { runId: start.runId, child };
}
