import { statementName, type Queryable } from '../pool';
import { toThread, type Thread, type ThreadRow } from '../threads/threads';
import { costsOf, type CostColumns, type RunCost } from './stored-runs';

/** A thread as GET /v1/threads/:id shows it: with what its runs' completed LLM turns and sampling answers cost. */
export interface ThreadWithCost extends Thread {
  /** the turns of the thread's own runs */
  cost: RunCost;
  /** plus the turns of the runs those started as sub-agents (on threads of their own), at any depth */
  costWithChildren: RunCost;
}

// One statement per read, tenant-scoped as the thread is. The thread's runs come from runs_thread_idx,
// their turns from run_turns' key, their sub-agent runs from runs_parent_idx: a sum over the thread's
// turns, which is why the thread list does not carry it (a lateral per listed thread).
const THREAD_WITH_COST_SQL = `
SELECT t.*, own.usd AS cost_usd, own.priced AS cost_priced, tree.usd AS tree_cost_usd, tree.priced AS tree_cost_priced
FROM threads t
LEFT JOIN LATERAL (
  SELECT coalesce(sum(x.cost_usd), 0)::text AS usd, bool_and(x.cost_usd IS NOT NULL) AS priced FROM (
    SELECT x.cost_usd FROM runs r JOIN run_turns x ON x.run_id = r.id WHERE r.thread_id = t.id AND x.completed_at IS NOT NULL
    UNION ALL SELECT s.cost_usd FROM runs r JOIN run_samplings s ON s.run_id = r.id WHERE r.thread_id = t.id AND s.status = 'answered') x
) own ON true
LEFT JOIN LATERAL (
  WITH RECURSIVE tree AS (
    SELECT c.id FROM runs r JOIN runs c ON c.parent_run_id = r.id WHERE r.thread_id = t.id
    UNION ALL SELECT c.id FROM runs c JOIN tree ON c.parent_run_id = tree.id)
  SELECT coalesce(sum(x.cost_usd), 0)::text AS usd, bool_and(x.cost_usd IS NOT NULL) AS priced FROM (
    SELECT x.cost_usd FROM run_turns x WHERE x.run_id IN (SELECT id FROM tree) AND x.completed_at IS NOT NULL
    UNION ALL SELECT s.cost_usd FROM run_samplings s WHERE s.run_id IN (SELECT id FROM tree) AND s.status = 'answered') x
) tree ON true
WHERE t.id = $1 AND t.tenant_id = $2`;

/** The tenant's thread with its runs' cost; another tenant's thread answers as none does. */
export async function findTenantThreadWithCost(db: Queryable, tenantId: string, id: string): Promise<ThreadWithCost | undefined> {
  const { rows } = await db.query<ThreadRow & CostColumns>({
    name: statementName(THREAD_WITH_COST_SQL), text: THREAD_WITH_COST_SQL, values: [id, tenantId],
  });
  return rows[0] && { ...toThread(rows[0]), ...costsOf(rows[0]) };
}
