import { upsertSearchAttributes } from '@temporalio/workflow';
import { WAITING_FOR_VALUES, waitingForKey, type WaitingFor } from '../core/search-attributes';

/**
 * The run's `waitingFor` search attribute, which `GET /v1/runs?waiting=true` lists by: each kind of
 * wait says whether it waits, and the attribute follows (approval first, then input, budget, caller_tool). Upserted only on a change,
 * so that a turn with several waiting calls adds one command to history, not one per call.
 */
export function waitingAttribute() {
  const waits: Record<WaitingFor, boolean> = { approval: false, input: false, budget: false, caller_tool: false };
  let listed: WaitingFor | undefined;
  return {
    set(kind: WaitingFor, waiting: boolean) {
      waits[kind] = waiting;
      const value = WAITING_FOR_VALUES.find((k) => waits[k]);
      if (value === listed) return;
      listed = value;
      upsertSearchAttributes([{ key: waitingForKey, value: value ?? null }]);
    },
  };
}

export type WaitingAttribute = ReturnType<typeof waitingAttribute>;
