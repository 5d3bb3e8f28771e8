import { randomUUID } from 'node:crypto';
import type { ApprovalKeyKind, DecidedBy } from '../../core/approval';
import type { Usage } from '../../core/messages';
import type { SamplingAnswer, SamplingRequest, SamplingStatus } from '../../core/sampling';
import type { PricedUsage } from '../../core/pricing';
import type { Queryable } from '../pool';
import { storableJsonText, storableText } from '../storable-text';
import { decidedByValues, toDecidedBy } from '../approvals';

/**
 * MCP servers' requests to sample the run's model (migration 13). Inserted by the activity that got
 * the request, decided by a reviewer through the API (with `approve`: one conditional update, so
 * of two decisions exactly one wins), answered by the model's step, and read back by the call that
 * carries the answer to the server, which then clears it.
 */

export interface SamplingRecord {
  samplingId: string;
  runId: string;
  toolCallId: string;
  turn: number;
  name: string;
  integrationId: string | null;
  /** a 2026-era server's request, part of a round the workflow waits for */
  roundId?: string;
  requestKey?: string;
  request: SamplingRequest;
  needsApproval: boolean;
  status: SamplingStatus;
  reason: string | null;
  keyKind: ApprovalKeyKind | null;
  /** the reviewer who decided (migration 26); null otherwise */
  decidedBy: DecidedBy | null;
  usage: Usage | null;
  /** what the answer cost (migration 34); null: not answered, not priced, or older */
  costUsd: number | null;
  error: string | null;
  requestedAt: string;
  expiresAt: string;
  resolvedAt: string | null;
}

interface SamplingRow {
  sampling_id: string; run_id: string; tool_call_id: string; turn: number; name: string; integration_id: string | null;
  round_id: string | null; request_key: string | null; request: SamplingRequest; needs_approval: boolean; status: SamplingStatus;
  reason: string | null; key_kind: ApprovalKeyKind | null; usage: Usage | null; cost_usd: string | null; error: string | null;
  requested_at: Date; expires_at: Date; resolved_at: Date | null; decided_by_id: string | null; decided_by_name: string | null;
}

const COLUMNS = `sampling_id, run_id, tool_call_id, turn, name, integration_id, round_id, request_key, request, needs_approval, status,
  reason, key_kind, usage, cost_usd, error, requested_at, expires_at, resolved_at, decided_by_id, decided_by_name`;

const toRecord = (r: SamplingRow): SamplingRecord => ({
  samplingId: r.sampling_id, runId: r.run_id, toolCallId: r.tool_call_id, turn: r.turn, name: r.name, integrationId: r.integration_id,
  ...(r.round_id ? { roundId: r.round_id } : {}), ...(r.request_key !== null ? { requestKey: r.request_key } : {}),
  request: r.request, needsApproval: r.needs_approval, status: r.status, reason: r.reason, keyKind: r.key_kind, decidedBy: toDecidedBy(r),
  usage: r.usage, costUsd: r.cost_usd === null ? null : Number(r.cost_usd), error: r.error,
  requestedAt: r.requested_at.toISOString(), expiresAt: r.expires_at.toISOString(),
  resolvedAt: r.resolved_at?.toISOString() ?? null,
});

export interface NewSampling {
  runId: string;
  toolCallId: string;
  turn: number;
  name: string;
  integrationId: string;
  roundId?: string;
  requestKey?: string;
  request: SamplingRequest;
  needsApproval: boolean;
  /** how long a reviewer has to decide */
  waitMs: number;
}

export const newSamplingId = () => `samp_${randomUUID().replace(/-/g, '')}`;

export async function insertSampling(db: Queryable, s: NewSampling & { samplingId?: string }): Promise<SamplingRecord> {
  const { rows } = await db.query<SamplingRow>(
    `INSERT INTO run_samplings (sampling_id, run_id, tool_call_id, turn, name, integration_id, round_id, request_key, request,
                               needs_approval, expires_at)
     VALUES ($1, $2, $3, $11, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10::double precision / 1000)) RETURNING ${COLUMNS}`,
    [s.samplingId ?? newSamplingId(), s.runId, storableText(s.toolCallId), storableText(s.name), s.integrationId, s.roundId ?? null,
      s.requestKey === undefined ? null : storableText(s.requestKey), storableJsonText(s.request), s.needsApproval, s.waitMs, s.turn],
  );
  return toRecord(rows[0]);
}

/** How many sampling requests a tool call has made, in all its rounds. */
export async function callSamplingCount(db: Queryable, runId: string, toolCallId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM run_samplings WHERE run_id = $1 AND tool_call_id = $2',
    [runId, toolCallId],
  );
  return rows[0].n;
}

export async function findSampling(db: Queryable, runId: string, samplingId: string): Promise<SamplingRecord | undefined> {
  const { rows } = await db.query<SamplingRow>(
    `SELECT ${COLUMNS} FROM run_samplings WHERE sampling_id = $1 AND run_id = $2`,
    [samplingId, runId],
  );
  return rows[0] && toRecord(rows[0]);
}

/** A request still waits for a reviewer while its call has not ended and the run has no result. */
const STILL_WAITING = `status = 'pending' AND needs_approval AND expires_at > now()
  AND NOT EXISTS (SELECT 1 FROM run_tool_calls c WHERE c.run_id = s.run_id AND c.tool_call_id = s.tool_call_id)
  AND NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = s.run_id)`;

/** Records a reviewer's decision if the request still waits for one; undefined when it does not (the first decision wins). */
export async function decideSampling(
  db: Queryable, runId: string, samplingId: string,
  d: { approve: boolean; reason?: string; keyKind: ApprovalKeyKind; decidedBy?: DecidedBy | null },
): Promise<SamplingRecord | undefined> {
  const { rows } = await db.query<SamplingRow>(
    `UPDATE run_samplings s SET status = $3, reason = $4, key_kind = $5, resolved_at = CASE WHEN $3 = 'denied' THEN now() END,
       decided_by_id = $6, decided_by_name = $7
     WHERE sampling_id = $1 AND run_id = $2 AND ${STILL_WAITING} RETURNING ${COLUMNS}`,
    [samplingId, runId, d.approve ? 'approved' : 'denied', d.reason ? storableText(d.reason) : null, d.keyKind,
      ...decidedByValues(d.decidedBy)],
  );
  return rows[0] && toRecord(rows[0]);
}

/** The model's answer; only a request that may still be answered takes it (false otherwise). */
/** `answer` null: it went straight back to the server, and only the status and usage are kept. */
export async function recordSamplingAnswer(
  db: Queryable, samplingId: string, answer: SamplingAnswer | null, usage: Usage, cost: PricedUsage,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE run_samplings SET status = 'answered', answer = $2, usage = $3, resolved_at = now(), provider = $4, model = $5, cost_usd = $6
     WHERE sampling_id = $1 AND (status = 'approved' OR (status = 'pending' AND NOT needs_approval))`,
    [samplingId, answer === null ? null : storableJsonText(answer), JSON.stringify(usage), cost.provider, cost.model, cost.costUsd],
  );
  return rowCount === 1;
}

/** Ends a request that was not answered: the model failed, the wait timed out, or its call ended. */
export async function closeSampling(
  db: Queryable, samplingId: string, status: 'failed' | 'timed_out' | 'cancelled', error?: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE run_samplings SET status = $2, error = $3, resolved_at = now() WHERE sampling_id = $1 AND status IN ('pending', 'approved')`,
    [samplingId, status, error === undefined ? null : storableText(error.slice(0, 2000))],
  );
  return rowCount === 1;
}

/** Requests that wait for a reviewer, oldest first (the run's pendingApprovals). */
export async function pendingSamplingApprovals(db: Queryable, runId: string): Promise<SamplingRecord[]> {
  const { rows } = await db.query<SamplingRow>(
    `SELECT ${COLUMNS} FROM run_samplings s WHERE run_id = $1 AND ${STILL_WAITING} ORDER BY requested_at, sampling_id`, [runId]);
  return rows.map(toRecord);
}

/** What a follower of the run shows: requests still open, and those resolved since `since`. */
export async function followedSamplings(db: Queryable, runId: string, since: Date): Promise<SamplingRecord[]> {
  const { rows } = await db.query<SamplingRow>(
    `SELECT ${COLUMNS} FROM run_samplings s WHERE run_id = $1 AND (resolved_at >= $2 OR (resolved_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM run_tool_calls c WHERE c.run_id = s.run_id AND c.tool_call_id = s.tool_call_id)))
     ORDER BY requested_at, sampling_id LIMIT 200`, [runId, since]);
  return rows.map(toRecord);
}
