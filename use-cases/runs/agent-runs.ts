import type { Client } from '@temporalio/client';
import type { Db } from '../../store/pool';
import { runHasEnded } from './start-run';

/**
 * A running run of the agent (as its thread's active run), if any. Runs read their agent at every
 * turn, so changing or deleting an agent under a running run would change it halfway.
 */
export async function runningRunOfAgent(deps: { db: Db; client: Client }, agentId: string): Promise<string | undefined> {
  const { rows } = await deps.db.query<{ id: string }>(
    `SELECT r.id FROM runs r JOIN threads t ON t.active_run_id = r.id
     WHERE r.agent_id = $1 AND NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = r.id)
     ORDER BY r.created_at LIMIT 20`,
    [agentId],
  );
  // A thread keeps pointing at a run whose workflow was terminated until its next run claims it.
  for (const { id } of rows) if (!(await runHasEnded(deps, id))) return id;
  return undefined;
}
