import type { Client } from '@temporalio/client';
import type { Db } from '../../store/pool';
import { unendedRunsOfAgent } from '../../store/runs/listing';
import { runHasEnded } from './start-run';

/**
 * A running run of the agent (as its thread's active run), if any. Runs read their agent at every
 * turn, so changing or deleting an agent under a running run would change it halfway.
 */
export async function runningRunOfAgent(deps: { db: Db; client: Client }, agentId: string): Promise<string | undefined> {
  // A thread keeps pointing at a run whose workflow was terminated until its next run claims it.
  for (const id of await unendedRunsOfAgent(deps.db, agentId)) if (!(await runHasEnded(deps, id))) return id;
  return undefined;
}
