import type { DecidedBy } from '../core/approval';
import type { BudgetRequest, BudgetSpent, BudgetStatus, RaisableLimits } from '../core/budget-ask';
import type { BudgetAdd, LimitName } from '../core/run-limits';
import { decidedByValues, toDecidedBy } from './approvals';
import type { Queryable } from './pool';

/**
 * Runs that asked a person for more budget (migration 32). Written by the run's own activities
 * (idempotent, since they retry), read by the API: a pending request is never asked of the workflow.
 */

export interface BudgetRequestRecord {
  runId: string;
  seq: number;
  limitReached: LimitName;
  spent: BudgetSpent;
  limits: RaisableLimits;
  status: 'pending' | BudgetStatus;
  added: BudgetAdd | null;
  decidedBy: DecidedBy | null;
  requestedAt: string;
  expiresAt: string;
  resolvedAt: string | null;
}

interface BudgetRow {
  run_id: string; seq: number; limit_reached: LimitName; spent: BudgetSpent; limits: RaisableLimits;
  status: BudgetRequestRecord['status']; added: BudgetAdd | null; decided_by_id: string | null; decided_by_name: string | null;
  requested_at: Date; expires_at: Date; resolved_at: Date | null;
}

const toRecord = (r: BudgetRow): BudgetRequestRecord => ({
  runId: r.run_id, seq: r.seq, limitReached: r.limit_reached, spent: r.spent, limits: r.limits, status: r.status, added: r.added,
  decidedBy: toDecidedBy(r), requestedAt: r.requested_at.toISOString(), expiresAt: r.expires_at.toISOString(),
  resolvedAt: r.resolved_at?.toISOString() ?? null,
});

/** A request, in its run's tenant; a retried request keeps the first row, with its first request time. */
export async function insertBudgetRequest(db: Queryable, req: BudgetRequest): Promise<BudgetRequestRecord> {
  await db.query(
    `INSERT INTO run_budget_requests (run_id, seq, tenant_id, limit_reached, spent, limits, expires_at)
     SELECT id, $2, tenant_id, $3, $4, $5, now() + $6 * interval '1 millisecond' FROM runs WHERE id = $1
     ON CONFLICT (run_id, seq) DO NOTHING`,
    [req.runId, req.seq, req.limitReached, JSON.stringify(req.spent), JSON.stringify(req.limits), req.timeoutMs],
  );
  const found = await findBudgetRequest(db, req.runId, req.seq);
  if (!found) throw new Error(`Run ${req.runId} does not exist`);
  return found;
}

/** Ends a pending request; a request ended already keeps its first outcome, which is returned. */
export async function resolveBudgetRequest(
  db: Queryable, runId: string, seq: number, outcome: { status: BudgetStatus; added?: BudgetAdd; decidedBy?: DecidedBy },
): Promise<BudgetRequestRecord | undefined> {
  const [byId, byName] = decidedByValues(outcome.decidedBy);
  await db.query(
    `UPDATE run_budget_requests SET status = $3, added = $4, decided_by_id = $5, decided_by_name = $6, resolved_at = now()
     WHERE run_id = $1 AND seq = $2 AND status = 'pending'`,
    [runId, seq, outcome.status, outcome.added ? JSON.stringify(outcome.added) : null, byId, byName],
  );
  return findBudgetRequest(db, runId, seq);
}

export async function findBudgetRequest(db: Queryable, runId: string, seq: number): Promise<BudgetRequestRecord | undefined> {
  const { rows } = await db.query<BudgetRow>('SELECT * FROM run_budget_requests WHERE run_id = $1 AND seq = $2', [runId, seq]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** The request the run waits on, if it waits for budget (a run asks one at a time). */
export async function pendingBudgetRequest(db: Queryable, runId: string): Promise<BudgetRequestRecord | undefined> {
  const { rows } = await db.query<BudgetRow>(
    `SELECT * FROM run_budget_requests WHERE run_id = $1 AND status = 'pending' ORDER BY seq DESC LIMIT 1`, [runId],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** The run's latest request, whatever its status: what an answer that came too late is told. */
export async function latestBudgetRequest(db: Queryable, runId: string): Promise<BudgetRequestRecord | undefined> {
  const { rows } = await db.query<BudgetRow>('SELECT * FROM run_budget_requests WHERE run_id = $1 ORDER BY seq DESC LIMIT 1', [runId]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}
