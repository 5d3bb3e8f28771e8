import type { Queryable } from '../pool';
import { CALLER_TOOLS_COPY, recordReplay, replayRunInsert, type NewReplay } from '../runs/replays';
import type { RunRecord } from '../runs/runs';
import { threadFreeFor } from '../threads/thread-claim';

/**
 * Recording an eval's replays (migration 39): which run the eval's `index`-th is, the replay of a
 * thread's later run on the thread its earlier runs' replays made, and the replay's run on its row.
 */

export interface PlannedReplay {
  originalRunId: string;
  group: number;
}

export async function plannedReplay(db: Queryable, evalId: string, index: number): Promise<PlannedReplay | undefined> {
  const { rows } = await db.query<{ original_run_id: string; grp: number }>(
    'SELECT original_run_id, grp FROM eval_runs WHERE eval_id = $1 AND idx = $2', [evalId, index],
  );
  return rows[0] && { originalRunId: rows[0].original_run_id, group: rows[0].grp };
}

/**
 * A replay on a thread that exists (a thread's later run, after its earlier runs' replays), in one
 * statement: the thread claimed, the run (the original's input) recorded with the caller tools the
 * original declared. Undefined when the thread is held by a run still running, or the original is gone.
 */
export async function insertReplayOnThread(db: Queryable, r: NewReplay): Promise<RunRecord | undefined> {
  const text = `WITH o AS (SELECT id, input FROM runs WHERE id = $1),
    claim AS (
      UPDATE threads th SET active_run_id = $3 WHERE th.id = $2 AND EXISTS (SELECT 1 FROM o) AND ${threadFreeFor('th', '$3')}
      RETURNING th.id, th.tenant_id),
    ${replayRunInsert('claim')},
    ${CALLER_TOOLS_COPY}
    SELECT row_to_json(run) AS run FROM run`;
  return recordReplay(db, text, r);
}

/** The replay's run on the eval's row, once recorded. */
export async function setReplayRun(db: Queryable, evalId: string, index: number, runId: string): Promise<void> {
  await db.query('UPDATE eval_runs SET replay_run_id = $3 WHERE eval_id = $1 AND idx = $2', [evalId, index, runId]);
}
