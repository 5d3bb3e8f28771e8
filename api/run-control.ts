import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Db } from '../core/db/pool';
import { readRun, type RunView } from '../core/runs/read-run';

export interface RunControlDeps {
  db: Db;
  client: Client;
}

// A floor between re-reads when Temporal cannot be waited on (a start still in flight, a lost server).
const MIN_POLL_INTERVAL_MS = 250;

/**
 * The run object, once the run has ended or `waitMs` has passed, whichever comes first.
 * It waits on the workflow's result rather than polling, so the answer comes as soon as the run ends.
 * `stop` ends the wait early (the server is closing) with the run as it is.
 */
export async function readRunWhenEnded(
  deps: RunControlDeps, runId: string, waitMs: number, stop?: AbortSignal,
): Promise<RunView | undefined> {
  const deadline = Date.now() + waitMs;
  let run = await readRun(deps, runId);
  while (run?.status === 'running' && !stop?.aborted) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) break;
    const startedAt = Date.now();
    const closed = await workflowClosedWithin(deps.client, runId, remaining, stop);
    if (!closed) await sleep(Math.min(MIN_POLL_INTERVAL_MS - (Date.now() - startedAt), deadline - Date.now()));
    run = await readRun(deps, runId);
    // A closed workflow without a result row (terminated by an operator) will not change any more.
    if (closed) break;
  }
  return run;
}

/** True when the workflow closed within `ms`; false when the wait ran out or Temporal could not answer. */
async function workflowClosedWithin(client: Client, runId: string, ms: number, stop?: AbortSignal): Promise<boolean> {
  const abort = new AbortController();
  // Aborting cancels the history long-poll itself, so no gRPC call outlives the HTTP request.
  const timer = setTimeout(() => abort.abort(), ms);
  const signal = stop ? AbortSignal.any([abort.signal, stop]) : abort.signal;
  try {
    await client.withAbortSignal(signal, () => client.workflow.getHandle(runId).result());
    return true;
  } catch (err) {
    return err instanceof WorkflowFailedError; // failed, cancelled, terminated or timed out: closed all the same
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Requests cancellation and answers with the run as it is now. A run that has already
 * ended is returned as it is: cancelling it is not an error.
 */
export async function cancelRun(deps: RunControlDeps, runId: string): Promise<RunView | undefined> {
  const run = await readRun(deps, runId);
  if (run?.status !== 'running') return run;
  try {
    await deps.client.workflow.getHandle(runId).cancel();
  } catch (err) {
    // It closed between the read and the request; the re-read below shows how it ended.
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  return (await readRun(deps, runId)) ?? run;
}
