import type { Queryable } from '../pool';

/**
 * A thread runs one run at a time: its claim (threads.active_run_id) is free for a run when no run
 * holds it, that run holds it already, or its holder's result is written (the holder has ended).
 * The one statement that records a run on a thread (runs/lifecycle.ts) and claimThread below
 * both ask this, with the thread's alias and the run's parameter.
 */
export const threadFreeFor = (thread: string, runId: string) => `(${thread}.active_run_id IS NULL OR ${thread}.active_run_id = ${runId}`
  + ` OR EXISTS (SELECT 1 FROM run_results WHERE run_id = ${thread}.active_run_id))`;

/** Claims the thread for the run; when it cannot, names the run that holds it (a run without a result). */
export async function claimThread(
  db: Queryable, threadId: string, runId: string,
): Promise<{ claimed: true } | { claimed: false; holder?: string }> {
  const { rows } = await db.query<{ claimed: boolean; holder: string | null }>(
    `WITH claim AS (UPDATE threads t SET active_run_id = $2 WHERE t.id = $1 AND ${threadFreeFor('t', '$2')} RETURNING id)
     SELECT EXISTS (SELECT 1 FROM claim) AS claimed, (SELECT active_run_id FROM threads WHERE id = $1) AS holder`,
    [threadId, runId],
  );
  const row = rows[0];
  return row?.claimed ? { claimed: true } : { claimed: false, ...(row?.holder ? { holder: row.holder } : {}) };
}

/** Lets go of the thread, if this run still holds it. */
export async function releaseThread(db: Queryable, threadId: string, runId: string): Promise<void> {
  await db.query('UPDATE threads SET active_run_id = NULL WHERE id = $1 AND active_run_id = $2', [threadId, runId]);
}
