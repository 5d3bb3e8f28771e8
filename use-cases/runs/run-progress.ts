import type { Client } from '@temporalio/client';
import type { Queryable } from '../../store/pool';
import { nextEventSeq } from '../../store/runs/events';
import { findRunResult } from '../../store/runs/results';
import type { RunProgress } from './follow-events';

/** How long a follower waits for Temporal to describe a run's workflow. */
const DESCRIBE_DEADLINE_MS = 2_000;

/**
 * Where a run stands by its result alone. A follower that trusts the API's reconciliation with
 * runs closed from outside (it writes their result and run_ended) needs no more.
 */
export async function storedProgress(db: Queryable, runId: string): Promise<RunProgress> {
  return (await findRunResult(db, runId)) ? 'ended' : 'running';
}

/**
 * Where a run stands, asking Temporal when it has no result yet: a workflow closed from outside
 * (terminated, timed out) writes nothing, and a follower without the reconciliation must notice it.
 */
export async function runProgress(deps: { db: Queryable; client: Client }, runId: string): Promise<RunProgress> {
  if (await findRunResult(deps.db, runId)) return 'ended';
  try {
    const handle = deps.client.workflow.getHandle(runId);
    const description = await deps.client.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () => handle.describe());
    if (description.status.name === 'RUNNING') return 'running';
  } catch {
    return 'running';
  }
  return (await findRunResult(deps.db, runId)) ? 'ended' : 'closed_without_result';
}

/** The seq of the run's last event so far (0 before its first). */
export async function lastEventSeq(db: Queryable, runId: string): Promise<number> {
  return (await nextEventSeq(db, runId)) - 1;
}
