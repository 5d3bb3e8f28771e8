import { ApplicationFailure, Context } from '@temporalio/activity';
import { OUTPUT_MATCH_TIMEOUT_MS, type EvalStatus } from '../core/eval';
import { failedExpectations, toolCallChanges, type PatternVerdict } from '../core/eval-scoring';
import type { RunError } from '../core/run';
import { searchBounded } from '../platform/bounded-pattern';
import { endEval, findEval } from '../store/evals/evals';
import { evalGroups, evalRunFacts, storeScores, type EvalRunFacts } from '../store/evals/eval-runs';
import type { ActivityDeps } from './deps';
import { createEvalReplayActivities } from './eval-replays';

/*
 * The eval workflow's steps (workflows/eval-workflow.ts): its plan, each replay's run recorded
 * (eval-replays.ts), the scores, its end. Each reads and writes PostgreSQL by the eval's id and
 * hands the workflow ids and counts only.
 */

const evalNotFound = (evalId: string) => ApplicationFailure.nonRetryable(`Eval ${evalId} does not exist`, 'EvalNotFound');

export function createEvalActivities(deps: Pick<ActivityDeps, 'db' | 'logger'>) {
  const { db } = deps;
  return {
    ...createEvalReplayActivities(deps),

    /** The group of each of the eval's runs, by index: a thread's runs share one. */
    async planEval(input: { evalId: string }): Promise<{ groupOf: number[] }> {
      if (!(await findEval(db, input.evalId))) throw evalNotFound(input.evalId);
      return { groupOf: await evalGroups(db, input.evalId) };
    },

    /**
     * Scores every replay against its expectation, from the runs' results in PostgreSQL, stores
     * the scores and ends the eval `completed` (an eval cancelled meanwhile stays cancelled).
     */
    async scoreEval(input: { evalId: string }): Promise<{ runs: number; passed: number; failed: number }> {
      const facts = await evalRunFacts(db, input.evalId);
      const scores = facts.map((f) => {
        Context.current().heartbeat();
        return scoreOf(f);
      });
      await storeScores(db, input.evalId, scores);
      await endEval(db, input.evalId, { status: 'completed' });
      const passed = scores.filter((s) => s.passed).length;
      return { runs: scores.length, passed, failed: scores.length - passed };
    },

    /** Ends the eval as cancelled or failed, unless it has ended already. */
    async endEval(input: { evalId: string; status: Exclude<EvalStatus, 'running' | 'completed'>; error?: RunError }): Promise<void> {
      await endEval(db, input.evalId, { status: input.status, ...(input.error ? { error: input.error } : {}) });
    },
  };
}

/** One replay's score; a run without a replay's result fails as `status: not replayed`. */
function scoreOf(f: EvalRunFacts): { index: number; passed: boolean; failed: string[]; toolChanges: ReturnType<typeof toolCallChanges> } {
  const original = f.original?.toolCalls ?? [];
  if (!f.replay) {
    return { index: f.index, passed: false, failed: ['status: not replayed'], toolChanges: toolCallChanges(original, []) };
  }
  const pattern: PatternVerdict | undefined = f.expect.outputMatches === undefined
    ? undefined : searchBounded(f.expect.outputMatches, f.replay.output ?? '', OUTPUT_MATCH_TIMEOUT_MS);
  const failed = failedExpectations(f.expect, f.replay, pattern);
  return { index: f.index, passed: failed.length === 0, failed, toolChanges: toolCallChanges(original, f.replay.toolCalls) };
}
