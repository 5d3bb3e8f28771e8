import type { RunStatus } from '../../core/run';
import type { Queryable } from '../pool';

/** Which runs there are, for listings and for the API's reconciliation: small reads across runs. */

export interface StoredFacts {
  createdAt: string; status?: RunStatus; stopReason: string | null; turns: number | null; endedAt: string | null;
}

/** A run's turns: its result's once ended, else those completed so far in run_turns (as GET /v1/runs/:id reports them). */
const TURNS_SO_FAR = `COALESCE(rr.turns, (
  SELECT count(*)::int FROM run_turns t WHERE t.run_id = r.id AND t.completed_at IS NOT NULL)) AS turns`;

/** One query per page: creation times from runs, outcomes from the write-once run_results, progress from run_turns. */
export async function storedRunFacts(db: Queryable, ids: string[]): Promise<Map<string, StoredFacts>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{
    id: string; created_at: Date; status: RunStatus | null; stop_reason: string | null; turns: number | null; ended_at: Date | null;
  }>(
    `SELECT r.id, r.created_at, rr.status, rr.stop_reason, rr.ended_at, ${TURNS_SO_FAR}
     FROM runs r LEFT JOIN run_results rr ON rr.run_id = r.id WHERE r.id = ANY($1)`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, {
    createdAt: r.created_at.toISOString(), status: r.status ?? undefined, stopReason: r.stop_reason,
    turns: r.turns, endedAt: r.ended_at?.toISOString() ?? null,
  }]));
}

/**
 * The agent's runs that hold their thread and have no result (at most 20, oldest first): they may
 * still run. Whether one has ended from outside only Temporal can tell.
 */
export async function unendedRunsOfAgent(db: Queryable, agentId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT r.id FROM runs r JOIN threads t ON t.active_run_id = r.id
     WHERE r.agent_id = $1 AND NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = r.id)
     ORDER BY r.created_at LIMIT 20`,
    [agentId],
  );
  return rows.map((r) => r.id);
}

/** Runs older than `minAgeMs` without a result, oldest first, with their age. */
export async function unendedRunsOlderThan(db: Queryable, minAgeMs: number, limit: number): Promise<{ id: string; ageMs: number }[]> {
  const { rows } = await db.query<{ id: string; age_ms: number }>(
    `SELECT r.id, (extract(epoch FROM now() - r.created_at) * 1000)::float8 AS age_ms FROM runs r
     WHERE NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = r.id) AND r.created_at < now() - $1 * interval '1 millisecond'
     ORDER BY r.created_at LIMIT $2`,
    [minAgeMs, limit],
  );
  return rows.map((r) => ({ id: r.id, ageMs: r.age_ms }));
}

export interface BuildFilter {
  buildId: string; tenantId: string; threadId?: string; agentId?: string; parentRunId?: string; status?: RunStatus;
}
export interface BuildRunRow extends Omit<StoredFacts, 'status'> { id: string; threadId: string; agentId: string; status: RunStatus }

/**
 * The tenant's runs whose last turn ran on this build (migration 22), newest first, after a (createdAt, id)
 * position: a keyset page. A run without a result counts as running.
 */
export async function runsOfBuild(
  db: Queryable, f: BuildFilter, after: { createdAt: string; id: string } | undefined, limit: number,
): Promise<BuildRunRow[]> {
  const values: unknown[] = [f.buildId, limit, f.tenantId];
  const where = ['r.build_id = $1', 'r.tenant_id = $3'];
  const add = (clause: (n: number) => string, value: unknown) => {
    values.push(value);
    where.push(clause(values.length));
  };
  if (f.threadId) add((n) => `r.thread_id = $${n}`, f.threadId);
  if (f.agentId) add((n) => `r.agent_id = $${n}`, f.agentId);
  if (f.parentRunId) add((n) => `r.parent_run_id = $${n}`, f.parentRunId);
  if (f.status === 'running') where.push('rr.run_id IS NULL');
  else if (f.status) add((n) => `rr.status = $${n}`, f.status);
  if (after) {
    values.push(after.createdAt, after.id);
    where.push(`(r.created_at, r.id) < ($${values.length - 1}::timestamptz, $${values.length})`);
  }
  const { rows } = await db.query<{
    id: string; thread_id: string; agent_id: string; created_at: Date; status: RunStatus | null; stop_reason: string | null;
    turns: number | null; ended_at: Date | null;
  }>(
    `SELECT r.id, r.thread_id, r.agent_id, r.created_at, rr.status, rr.stop_reason, rr.ended_at, ${TURNS_SO_FAR}
     FROM runs r LEFT JOIN run_results rr ON rr.run_id = r.id
     WHERE ${where.join(' AND ')} ORDER BY r.created_at DESC, r.id DESC LIMIT $2`,
    values,
  );
  return rows.map((r) => ({
    id: r.id, threadId: r.thread_id, agentId: r.agent_id, createdAt: r.created_at.toISOString(), status: r.status ?? 'running',
    stopReason: r.stop_reason, turns: r.turns, endedAt: r.ended_at?.toISOString() ?? null,
  }));
}
