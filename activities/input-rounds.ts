import type { InputWait } from '../core/tool-call';
import { closeInputRound, findCallRound } from '../store/runs/input-rounds';
import type { ActivityDeps } from './deps';

/** The workflow's reads and writes of a durable round of questions (workflows/input-wait.ts, workflows/call-tool.ts). */
export function createInputRoundActivities(deps: ActivityDeps) {
  return {
    /** Expires the round's unanswered questions; answered: every question had its answer first. */
    async closeInputRound({ roundId }: { roundId: string }): Promise<{ answered: boolean }> {
      return { answered: await closeInputRound(deps.db, roundId) };
    },
    /** The round a call's activity stored before its worker was lost, if it got that far. */
    async findCallRound({ runId, toolCallId, round }: { runId: string; toolCallId: string; round: number }): Promise<{ wait: InputWait | null }> {
      return { wait: (await findCallRound(deps.db, runId, toolCallId, round)) ?? null };
    },
  };
}
