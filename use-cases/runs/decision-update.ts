import type { Client } from '@temporalio/client';

/*
 * A person's decision sent to a run's workflow as an update (an approval, a budget answer): the
 * API has checked PostgreSQL first, and the update's validator settles races. One deadline for
 * them all: a run whose workers are all down answers 503 after it, and the run waits on.
 */

/** A decision waits this long for a worker to take it. */
const DECISION_DEADLINE_MS = 60_000;

/** Sends the update `name` with `input` to the run's workflow, and resolves once the workflow has recorded it. */
export function sendDecision(client: Client, runId: string, name: string, input: unknown): Promise<unknown> {
  const handle = client.workflow.getHandle(runId);
  return client.withDeadline(Date.now() + DECISION_DEADLINE_MS, () => handle.executeUpdate(name, { args: [input] }));
}

/** Whether a failed sendDecision ran out of its deadline (no worker took the update in time). */
export const missedDeadline = (err: unknown) => /deadline/i.test((err as Error)?.message ?? '') || (err as { code?: number })?.code === 4;
