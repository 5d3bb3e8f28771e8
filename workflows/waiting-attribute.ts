import { upsertSearchAttributes } from '@temporalio/workflow';
import { waitingForKey, type WaitingFor } from '../core/search-attributes';

/**
 * The run's `waitingFor` search attribute, which `GET /v1/runs?waiting=true` lists by: each kind of
 * wait says whether it waits, and the attribute follows (approval first). Upserted only on a change,
 * so that a turn with several waiting calls adds one command to history, not one per call.
 */
export function waitingAttribute() {
  const waits: Record<WaitingFor, boolean> = { approval: false, input: false };
  let listed: WaitingFor | undefined;
  return {
    set(kind: WaitingFor, waiting: boolean) {
      waits[kind] = waiting;
      const value = waits.approval ? 'approval' : waits.input ? 'input' : undefined;
      if (value === listed) return;
      listed = value;
      upsertSearchAttributes([{ key: waitingForKey, value: value ?? null }]);
    },
  };
}

export type WaitingAttribute = ReturnType<typeof waitingAttribute>;
