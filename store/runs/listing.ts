import type { RunStatus } from '../../core/run';
import type { Queryable } from '../pool';

/** Which runs there are, for listings and for the API's reconciliation: small reads across runs. */

export interface StoredFacts { createdAt: string; status?: RunStatus; stopReason: string | null; turns: number | null; endedAt: string | null }

/** One query per page: creation times from runs, outcomes from the write-once run_results, progress from run_turns. */
export async function storedRunFacts(db: Queryable, ids: string[]): Promise<Map<string, StoredFacts>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{
    id: string; created_at: Date; status: RunStatus | null; stop_reason: string | null; turns: number | null; ended_at: Date | null;
  }>(
    // A running run's turns so far come from run_turns, as GET /v1/runs/:id reports them.
    `SELECT r.id, r.created_at, rr.status, rr.stop_reason, rr.ended_at, COALESCE(rr.turns, (
       SELECT count(*)::int FROM run_turns t WHERE t.run_id = r.id AND t.completed_at IS NOT NULL)) AS turns
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
