import type { ModelConfig } from '../../core/agent-model';
import type { Expectation, EvalStatus } from '../../core/eval';
import { EngineError } from '../../core/engine-error';
import { statementName, type Queryable } from '../pool';
import type { StartedBy } from '../runs/runs';

/**
 * Evaluations (migration 39): an eval of a tenant, the runs it replays by index (with their group
 * and expectation), its status. What its replays did is read from their runs (eval-runs.ts).
 */

export interface NewEval {
  id: string;
  tenantId: string;
  name: string;
  tools: string;
  agentId: string | null;
  model: ModelConfig | null;
  startedBy: StartedBy;
  /** in the order they replay in: each with its group (a thread's runs share one) and expectation */
  runs: { originalRunId: string; group: number; expect: Expectation }[];
}

export interface EvalRecord {
  id: string;
  tenantId: string;
  name: string;
  status: EvalStatus;
  tools: string;
  agentId: string | null;
  model: ModelConfig | null;
  startedBy: StartedBy | null;
  error: { type: string; message: string } | null;
  createdAt: string;
  endedAt: string | null;
}

interface EvalRow {
  id: string; tenant_id: string; name: string; status: EvalStatus; tools: string; agent_id: string | null; model: ModelConfig | null;
  started_by: StartedBy | null; error: EvalRecord['error']; created_at: Date; ended_at: Date | null;
}

const toEval = (r: EvalRow): EvalRecord => ({
  id: r.id, tenantId: r.tenant_id, name: r.name, status: r.status, tools: r.tools, agentId: r.agent_id, model: r.model,
  startedBy: r.started_by, error: r.error, createdAt: r.created_at.toISOString(), endedAt: r.ended_at?.toISOString() ?? null,
});

const EVAL_COLUMNS = 'id, tenant_id, name, status, tools, agent_id, model, started_by, error, created_at, ended_at';

/** The eval and its runs, in one statement. */
export async function insertEval(db: Queryable, e: NewEval): Promise<EvalRecord> {
  const text = `WITH e AS (
      INSERT INTO evals (id, tenant_id, name, tools, agent_id, model, started_by) VALUES ($1, $2, $3, $4, $5, $6, $7)
      RETURNING ${EVAL_COLUMNS}),
    runs AS (
      INSERT INTO eval_runs (eval_id, idx, grp, original_run_id, expect)
      SELECT e.id, r.idx, r.grp, r.original_run_id, r.expect
      FROM e, jsonb_to_recordset($8::jsonb) AS r(idx int, original_run_id text, grp int, expect jsonb))
    SELECT * FROM e`;
  const runs = e.runs.map((r, idx) => ({ idx, original_run_id: r.originalRunId, grp: r.group, expect: r.expect }));
  const { rows } = await db.query<EvalRow>({
    name: statementName(text), text,
    values: [e.id, e.tenantId, e.name, e.tools, e.agentId, e.model ? JSON.stringify(e.model) : null, JSON.stringify(e.startedBy),
      JSON.stringify(runs)],
  });
  return toEval(rows[0]);
}

/** An eval whose workflow could not be started leaves nothing behind. */
export async function deleteEval(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM evals WHERE id = $1', [id]);
}

/** The eval; given a tenant, only if it is that tenant's (another tenant's eval reads as none). */
export async function findEval(db: Queryable, id: string, tenantId?: string): Promise<EvalRecord | undefined> {
  const { rows } = await db.query<EvalRow>(
    `SELECT ${EVAL_COLUMNS} FROM evals WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)`, [id, tenantId ?? null],
  );
  return rows[0] && toEval(rows[0]);
}

/**
 * Ends a running eval as `status`; an eval that has ended keeps how it ended (a retried end, a
 * cancel that came after the scores). False when it had ended already.
 */
export async function endEval(
  db: Queryable, id: string, end: { status: Exclude<EvalStatus, 'running'>; error?: { type: string; message: string } },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE evals SET status = $2, error = $3, ended_at = now() WHERE id = $1 AND status = 'running'`,
    [id, end.status, end.error ? JSON.stringify(end.error) : null],
  );
  return (rowCount ?? 0) > 0;
}

export interface EvalPage {
  evals: EvalRecord[];
  nextCursor: string | null;
}

/** A page of the tenant's evals, newest first; the cursor is the last eval's (creation time in microseconds, id). */
export async function listEvals(db: Queryable, req: { tenantId: string; cursor?: string; limit: number }): Promise<EvalPage> {
  const after = req.cursor === undefined ? undefined : decodeEvalCursor(req.cursor);
  const text = `SELECT ${EVAL_COLUMNS}, (extract(epoch FROM created_at) * 1000000)::bigint::text AS micros FROM evals
    WHERE tenant_id = $1 AND ($3::bigint IS NULL
      OR (created_at, id) < ('epoch'::timestamptz + $3::bigint * interval '1 microsecond', $4::text))
    ORDER BY created_at DESC, id DESC LIMIT $2`;
  const { rows } = await db.query<EvalRow & { micros: string }>({
    name: statementName(text), text, values: [req.tenantId, req.limit + 1, after?.micros ?? null, after?.id ?? null],
  });
  const page = rows.slice(0, req.limit);
  const last = page.at(-1);
  return {
    evals: page.map(toEval),
    nextCursor: rows.length > req.limit && last ? Buffer.from(`${last.micros}.${last.id}`).toString('base64url') : null,
  };
}

function decodeEvalCursor(cursor: string): { micros: string; id: string } {
  const match = /^(\d{1,18})\.([A-Za-z0-9_-]{1,128})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw new EngineError('invalid', 'The cursor is not one this listing gave out: use the nextCursor of a previous page');
  return { micros: match[1], id: match[2] };
}
