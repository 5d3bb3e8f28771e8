import { closeInputRound } from '../store/runs/input-rounds';
import type { ActivityDeps } from './deps';

/** The workflow's one write for a durable round of questions (workflows/input-wait.ts): closing it at its timeout. */
export function createInputRoundActivities(deps: ActivityDeps) {
  return {
    /** Expires the round's unanswered questions; answered: every question had its answer first. */
    async closeInputRound({ roundId }: { roundId: string }): Promise<{ answered: boolean }> {
      return { answered: await closeInputRound(deps.db, roundId) };
    },
  };
}
