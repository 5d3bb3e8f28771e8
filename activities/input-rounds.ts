import type { InputWait, ToolTask } from '../core/tool-call';
import { closeInputRound, findCallRound } from '../store/runs/input-rounds';
import { findCallToolTask } from '../store/runs/tool-tasks';
import type { ActivityDeps } from './deps';

/** The workflow's reads and writes of what a call waits on with no activity running (workflows/input-wait.ts, workflows/call-tool.ts). */
export function createInputRoundActivities(deps: ActivityDeps) {
  return {
    /** Expires the round's unanswered questions; answered: every question had its answer first. */
    async closeInputRound({ roundId }: { roundId: string }): Promise<{ answered: boolean }> {
      return { answered: await closeInputRound(deps.db, roundId) };
    },
    /**
     * What a call's activity stored before its worker was lost, if it got that far: its server's
     * round of questions, or (a first call) the task its server runs it as. `taskTimeoutMs`: the route's, if it sets one.
     */
    async findCallWait({ runId, toolCallId, turn, index, round, taskTimeoutMs }: {
      runId: string; toolCallId: string; turn: number; index: number; round: number; taskTimeoutMs?: number;
    }): Promise<{ wait: InputWait | null; task: ToolTask | null }> {
      const wait = await findCallRound(deps.db, runId, toolCallId, round);
      if (wait) return { wait, task: null };
      const stored = round === 1 ? await findCallToolTask(deps.db, runId, turn, index + 1) : undefined;
      return { wait: null, task: stored ? { taskRefId: stored.taskRefId, timeoutMs: taskTimeoutMs ?? stored.taskTimeoutMs } : null };
    },
  };
}
