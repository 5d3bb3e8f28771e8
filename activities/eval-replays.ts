import { ApplicationFailure } from '@temporalio/activity';
import { replayWorkflowInput, type RecordedReplay, type ReplayTools } from '../core/replay';
import { shortened } from '../core/truncated-text';
import { evalReplayIds } from '../platform/ids';
import { findAgent } from '../store/agents';
import { findEval } from '../store/evals/evals';
import { insertReplayOnThread, plannedReplay, setReplayRun } from '../store/evals/eval-replays';
import { insertReplay, recordedPreparation, type NewReplay } from '../store/runs/replays';
import { findRun, type RunRecord } from '../store/runs/runs';
import { findThread } from '../store/threads/threads';
import type { Queryable } from '../store/pool';
import type { ActivityDeps } from './deps';

/** What the eval workflow needs to start a replay's run as its child: ids, and what its run workflow is told. */
export interface EvalReplayStart {
  runId: string;
  threadId: string;
  agentId: string;
  originalRunId: string;
  /** its preparation discovers the original's integrations (a live replay that has some) */
  discovers: boolean;
  /** a replay that takes recorded results: its original, and where calls it did not make go */
  replay?: RecordedReplay;
  /** such a replay stops at a reached limit rather than wait for a person */
  limits?: { onLimit: 'stop' };
  /** the Web UI's line for the replay */
  summary: string;
}

/*
 * Recording an eval's replay, as POST /v1/runs/:id/replay records one (use-cases/runs/replay-run.ts),
 * but under a run id derived from the eval's and the run's index, so that a retry finds the run
 * its earlier attempt recorded; the eval workflow starts its workflow as a child.
 */
export function createEvalReplayActivities(deps: Pick<ActivityDeps, 'db' | 'logger'>) {
  const { db, logger } = deps;
  return {
    /**
     * Records the replay of the eval's `index`-th run, once: its first run of a group on a new
     * thread (with its thread's earlier messages), the group's later ones on that thread. Null when
     * it cannot be replayed (its original, its recording or its agent gone): the eval scores it so.
     */
    async startEvalReplay(input: { evalId: string; index: number }): Promise<EvalReplayStart | null> {
      const [record, planned] = await Promise.all([findEval(db, input.evalId), plannedReplay(db, input.evalId, input.index)]);
      if (!record || !planned) throw ApplicationFailure.nonRetryable(`Eval ${input.evalId} does not exist`, 'EvalNotFound');
      const original = await findRun(db, planned.originalRunId);
      const recorded = original && await recordedPreparation(db, original.id);
      const agent = original && await findAgent(db, record.agentId ?? original.agentId);
      if (!original || !recorded || !agent || agent.disabledAt) {
        logger.warn({ evalId: record.id, runId: planned.originalRunId }, 'the run cannot be replayed: its recording or its agent is gone');
        return null;
      }
      const ids = evalReplayIds(record.id, input.index, planned.group);
      const replay: NewReplay = {
        runId: ids.runId, threadId: ids.threadId, originalRunId: original.id, agentId: agent.id, tools: record.tools as ReplayTools,
        ...(record.model ? { model: record.model } : {}), startedBy: record.startedBy ?? { principalId: 'operator', name: 'operator' },
        evalId: record.id,
      };
      const run = await recordReplay(db, replay);
      await setReplayRun(db, record.id, input.index, run.id);
      const live = replay.tools === 'live' && recorded.integrationIds.length > 0;
      return {
        runId: run.id, threadId: run.threadId, agentId: agent.id, originalRunId: original.id, discovers: live,
        ...replayWorkflowInput({ runId: original.id, tools: replay.tools }),
        summary: `replay of run ${original.id} (eval ${shortened(record.name, 80)}): ${shortened(original.input.split('\n')[0] ?? '', 80)}`,
      };
    },
  };
}

/** The replay's run: the one recorded by an earlier attempt, else recorded now. */
async function recordReplay(db: Queryable, replay: NewReplay): Promise<RunRecord> {
  const earlier = await findRun(db, replay.runId);
  if (earlier) return earlier;
  const run = (await findThread(db, replay.threadId)) ? await insertReplayOnThread(db, replay) : await insertReplay(db, replay);
  // The group's thread still held by its earlier replay (its end not yet written): worth a retry.
  if (!run) throw new Error(`The replay ${replay.runId} could not be recorded on thread ${replay.threadId}; retrying`);
  return run;
}
