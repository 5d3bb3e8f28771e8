import type { TenantLimits } from '../core/tenancy';
import { statementName, type Queryable } from './pool';

/*
 * What a tenant's caps need of the database (migration 29): its limits, and the count of its
 * running runs under a lock, so that two starts of a capped tenant never both take its last place.
 */

const LIMITS_SQL = 'SELECT max_running_runs, tool_call_slots FROM tenants WHERE id = $1';

/** The tenant's limits; undefined when there is no such tenant. */
export async function findTenantLimits(db: Queryable, tenantId: string): Promise<TenantLimits | undefined> {
  const { rows } = await db.query<{ max_running_runs: number | null; tool_call_slots: number | null }>(
    { name: statementName(LIMITS_SQL), text: LIMITS_SQL, values: [tenantId] },
  );
  return rows[0] && { maxRunningRuns: rows[0].max_running_runs, toolCallSlots: rows[0].tool_call_slots };
}

/** The tenants with a tool-call cap, and theirs. */
export async function toolCallSlotCaps(db: Queryable): Promise<Map<string, number>> {
  const { rows } = await db.query<{ id: string; tool_call_slots: number }>(
    'SELECT id, tool_call_slots FROM tenants WHERE tool_call_slots IS NOT NULL',
  );
  return new Map(rows.map((r) => [r.id, r.tool_call_slots]));
}

/**
 * Inside a transaction: locks the tenant's row until it ends, then reads its run cap and how many
 * of its runs are running now. A run runs while it holds its thread's claim, which its end lets go of
 * in the statement that writes its result; a claim whose run has a result counts as free. Each step
 * is a statement of its own, so the count sees every run a start that held the lock before recorded.
 */
export async function lockedRunningRuns(tx: Queryable, tenantId: string): Promise<{ cap: number | null; running: number }> {
  const locked = await tx.query<{ max_running_runs: number | null }>(
    'SELECT max_running_runs FROM tenants WHERE id = $1 FOR UPDATE', [tenantId],
  );
  const cap = locked.rows[0]?.max_running_runs ?? null;
  if (cap === null) return { cap, running: 0 };
  const { rows } = await tx.query<{ running: number }>(
    `SELECT count(*)::int AS running FROM threads t
     WHERE t.tenant_id = $1 AND t.active_run_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = t.active_run_id)`,
    [tenantId],
  );
  return { cap, running: rows[0].running };
}
