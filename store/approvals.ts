import type { ApprovalKeyKind, ApprovalResolver, ApprovalStatus, DecidedBy } from '../core/approval';
import type { Queryable } from './pool';
import { storableText } from './storable-text';

/**
 * Tool calls that waited for a person's decision. Written by the run's own activities (idempotent,
 * since they retry), read by the API: pending approvals are never asked of the workflow.
 */

export interface ApprovalRecord {
  runId: string;
  turn: number;
  slot: number;
  toolCallId: string;
  name: string;
  integrationId: string | null;
  status: 'pending' | ApprovalStatus;
  reason: string | null;
  resolvedBy: ApprovalResolver | null;
  keyKind: ApprovalKeyKind | null;
  /** who decided (migration 26); null while pending, for timeouts and cancellations, /mcp decisions and older rows */
  decidedBy: DecidedBy | null;
  requestedAt: string;
  expiresAt: string;
  resolvedAt: string | null;
}

/** The two columns of migration 26 as one value: both or nothing. */
export const toDecidedBy = (r: { decided_by_id?: string | null; decided_by_name?: string | null }): DecidedBy | null =>
  (r.decided_by_id ? { principalId: r.decided_by_id, name: r.decided_by_name ?? '' } : null);

/** The values of decided_by_id and decided_by_name for a decision. */
export const decidedByValues = (by: DecidedBy | null | undefined): [string | null, string | null] =>
  (by ? [storableText(by.principalId), storableText(by.name)] : [null, null]);

interface ApprovalRow {
  run_id: string; turn: number; slot: number; tool_call_id: string; name: string; integration_id: string | null;
  status: ApprovalRecord['status']; reason: string | null; resolved_by: ApprovalResolver | null; key_kind: ApprovalKeyKind | null;
  requested_at: Date; expires_at: Date; resolved_at: Date | null; decided_by_id?: string | null; decided_by_name?: string | null;
}

const toApproval = (r: ApprovalRow): ApprovalRecord => ({
  runId: r.run_id, turn: r.turn, slot: r.slot, toolCallId: r.tool_call_id, name: r.name, integrationId: r.integration_id,
  status: r.status, reason: r.reason, resolvedBy: r.resolved_by, keyKind: r.key_kind, decidedBy: toDecidedBy(r),
  requestedAt: r.requested_at.toISOString(), expiresAt: r.expires_at.toISOString(), resolvedAt: r.resolved_at?.toISOString() ?? null,
});

export interface NewApproval {
  runId: string; turn: number; slot: number; toolCallId: string; name: string; integrationId: string | null; timeoutMs: number;
}

/** A retried request keeps the first row, with its first request time. */
export async function insertPendingApproval(db: Queryable, a: NewApproval): Promise<ApprovalRecord> {
  await db.query(
    `INSERT INTO run_approvals (run_id, turn, slot, tool_call_id, name, integration_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond') ON CONFLICT (run_id, turn, slot) DO NOTHING`,
    [a.runId, a.turn, a.slot, storableText(a.toolCallId), storableText(a.name), a.integrationId, a.timeoutMs],
  );
  const { rows } = await db.query<ApprovalRow>(
    'SELECT * FROM run_approvals WHERE run_id = $1 AND turn = $2 AND slot = $3',
    [a.runId, a.turn, a.slot],
  );
  return toApproval(rows[0]);
}

export interface ApprovalResolution {
  status: ApprovalStatus;
  reason?: string | null;
  resolvedBy: ApprovalResolver;
  keyKind?: ApprovalKeyKind | null;
  decidedBy?: DecidedBy | null;
}

/** Resolves a pending approval; a resolved one keeps its first resolution. Returns the row as it is now. */
export async function resolveApproval(
  db: Queryable, runId: string, turn: number, slot: number, r: ApprovalResolution,
): Promise<ApprovalRecord | undefined> {
  await db.query(
    `UPDATE run_approvals SET status = $4, reason = $5, resolved_by = $6, key_kind = $7, resolved_at = now(),
       decided_by_id = $8, decided_by_name = $9
     WHERE run_id = $1 AND turn = $2 AND slot = $3 AND status = 'pending'`,
    [runId, turn, slot, r.status, r.reason == null ? null : storableText(r.reason), r.resolvedBy, r.keyKind ?? null,
      ...decidedByValues(r.decidedBy)],
  );
  const { rows } = await db.query<ApprovalRow>(
    'SELECT * FROM run_approvals WHERE run_id = $1 AND turn = $2 AND slot = $3',
    [runId, turn, slot],
  );
  return rows[0] && toApproval(rows[0]);
}

/** The run's approval for a tool call id: the pending one if any, else the latest. */
export async function findApproval(db: Queryable, runId: string, toolCallId: string): Promise<ApprovalRecord | undefined> {
  const { rows } = await db.query<ApprovalRow>(
    `SELECT * FROM run_approvals WHERE run_id = $1 AND tool_call_id = $2 ORDER BY (status = 'pending') DESC, turn DESC, slot DESC LIMIT 1`,
    [runId, toolCallId],
  );
  return rows[0] && toApproval(rows[0]);
}

export interface PendingApproval {
  runId: string;
  toolCallId: string;
  turn: number;
  name: string;
  integrationId: string | null;
  /** the call's arguments, read from the transcript */
  arguments: unknown;
  requestedAt: string;
  expiresAt: string;
}

const PENDING_SQL = `
SELECT a.*, m.message->'toolCalls'->(a.slot - 1)->'arguments' AS arguments
FROM run_approvals a
LEFT JOIN run_messages m ON m.run_id = a.run_id AND m.turn = a.turn AND m.slot = 0
WHERE a.status = 'pending'`;

const toPending = (r: ApprovalRow & { arguments: unknown }): PendingApproval => ({
  runId: r.run_id, toolCallId: r.tool_call_id, turn: r.turn, name: r.name, integrationId: r.integration_id,
  arguments: r.arguments ?? {}, requestedAt: r.requested_at.toISOString(), expiresAt: r.expires_at.toISOString(),
});

export async function pendingApprovals(db: Queryable, runId: string): Promise<PendingApproval[]> {
  const { rows } = await db.query<ApprovalRow & { arguments: unknown }>(
    `${PENDING_SQL} AND a.run_id = $1 ORDER BY a.turn, a.slot`,
    [runId],
  );
  return rows.map(toPending);
}

/** The arguments of the call at (turn, index) as the LLM gave them; {} when the transcript lacks them. */
export async function toolCallArguments(db: Queryable, runId: string, at: { turn?: unknown; index?: unknown }): Promise<unknown> {
  if (typeof at.turn !== 'number' || typeof at.index !== 'number') return {};
  const { rows } = await db.query<{ arguments: unknown }>(
    `SELECT message->'toolCalls'->($3::int)->'arguments' AS arguments FROM run_messages WHERE run_id = $1 AND turn = $2 AND slot = 0`,
    [runId, at.turn, at.index],
  );
  return rows[0]?.arguments ?? {};
}
