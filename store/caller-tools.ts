import type { CallerTool } from '../core/caller-tools';
import type { DecidedBy } from '../core/approval';
import { decidedByValues, toDecidedBy } from './approvals';
import type { Queryable } from './pool';
import { storableJsonText, storableText } from './storable-text';

/*
 * Caller tools (migration 37): the tools a run declared, and each call of one, pending until its
 * caller answers. Calls are written by the run's own activities (idempotent, since they retry) and
 * answered by the API (one conditional update: of two answers, one wins; never after the call
 * ended, nor after its run did). The answer stays until the call's result is recorded.
 */

export interface RunCallerTools {
  tools: CallerTool[];
  timeoutMs: number;
}

/** A run's declared tools, in its tenant; a retried start keeps the first. */
export async function insertRunCallerTools(db: Queryable, runId: string, declared: RunCallerTools): Promise<void> {
  await db.query(
    `INSERT INTO run_caller_tools (run_id, tenant_id, tools, timeout_ms) SELECT id, tenant_id, $2, $3 FROM runs WHERE id = $1
     ON CONFLICT (run_id) DO NOTHING`,
    [runId, storableJsonText(declared.tools), declared.timeoutMs],
  );
}

export async function findRunCallerTools(db: Queryable, runId: string): Promise<RunCallerTools | undefined> {
  const { rows } = await db.query<{ tools: CallerTool[]; timeout_ms: number }>(
    'SELECT tools, timeout_ms FROM run_caller_tools WHERE run_id = $1', [runId]);
  return rows[0] && { tools: rows[0].tools, timeoutMs: rows[0].timeout_ms };
}

export type CallerToolCallStatus = 'pending' | 'answered' | 'timed_out' | 'cancelled';

export interface CallerToolCall {
  runId: string;
  toolCallId: string;
  turn: number;
  slot: number;
  name: string;
  arguments: Record<string, unknown>;
  status: CallerToolCallStatus;
  askedAt: string;
  expiresAt: string;
  answeredAt: string | null;
  answeredBy: DecidedBy | null;
}

interface CallRow {
  run_id: string; tool_call_id: string; turn: number; slot: number; name: string; arguments: Record<string, unknown>;
  status: CallerToolCallStatus; asked_at: Date; expires_at: Date; answered_at: Date | null;
  answered_by_id: string | null; answered_by_name: string | null;
}

const CALL_COLUMNS = 'run_id, tool_call_id, turn, slot, name, arguments, status, asked_at, expires_at, answered_at, '
  + 'answered_by_id, answered_by_name';

const toCall = (r: CallRow): CallerToolCall => ({
  runId: r.run_id, toolCallId: r.tool_call_id, turn: r.turn, slot: r.slot, name: r.name, arguments: r.arguments, status: r.status,
  askedAt: r.asked_at.toISOString(), expiresAt: r.expires_at.toISOString(), answeredAt: r.answered_at?.toISOString() ?? null,
  answeredBy: toDecidedBy({ decided_by_id: r.answered_by_id, decided_by_name: r.answered_by_name }),
});

export interface NewCallerToolCall {
  runId: string;
  toolCallId: string;
  turn: number;
  slot: number;
  name: string;
  arguments: Record<string, unknown>;
  timeoutMs: number;
}

/** The call, pending, in its run's tenant; a retried activity finds the row it wrote (and how long it has left). */
export async function insertCallerToolCall(db: Queryable, call: NewCallerToolCall): Promise<CallerToolCall> {
  await db.query(
    `INSERT INTO run_caller_tool_calls (run_id, tool_call_id, tenant_id, turn, slot, name, arguments, expires_at)
     SELECT id, $2, tenant_id, $3, $4, $5, $6, now() + $7 * interval '1 millisecond' FROM runs WHERE id = $1
     ON CONFLICT (run_id, tool_call_id) DO NOTHING`,
    [call.runId, storableText(call.toolCallId), call.turn, call.slot, storableText(call.name), storableJsonText(call.arguments),
      call.timeoutMs],
  );
  const found = await findCallerToolCall(db, call.runId, call.toolCallId);
  if (!found) throw new Error(`Run ${call.runId} does not exist`);
  return found;
}

export async function findCallerToolCall(db: Queryable, runId: string, toolCallId: string): Promise<CallerToolCall | undefined> {
  const { rows } = await db.query<CallRow>(
    `SELECT ${CALL_COLUMNS} FROM run_caller_tool_calls WHERE run_id = $1 AND tool_call_id = $2`, [runId, toolCallId]);
  return rows[0] && toCall(rows[0]);
}

/** The run's calls waiting for their caller, in the order the model made them; none once the run has ended. */
export async function pendingCallerToolCalls(db: Queryable, runId: string): Promise<CallerToolCall[]> {
  const { rows } = await db.query<CallRow>(
    `SELECT ${CALL_COLUMNS} FROM run_caller_tool_calls c WHERE c.run_id = $1 AND c.status = 'pending'
       AND NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = c.run_id)
     ORDER BY c.turn, c.slot`, [runId]);
  return rows.map(toCall);
}

/** What a caller answers: MCP content blocks (checked by the API), and whether they say the call failed. */
export interface CallerToolAnswer {
  content: unknown[];
  isError: boolean;
}

/**
 * Records the answer if the call still waits (pending, its run not ended); false when it was
 * answered, timed out or cancelled first. The first answer wins.
 */
export async function answerCallerToolCall(
  db: Queryable, runId: string, toolCallId: string, answer: CallerToolAnswer, answeredBy: DecidedBy | null,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE run_caller_tool_calls c SET status = 'answered', answer = $3, is_error = $4, answered_at = now(),
       answered_by_id = $5, answered_by_name = $6
     WHERE c.run_id = $1 AND c.tool_call_id = $2 AND c.status = 'pending'
       AND NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = c.run_id)`,
    [runId, toolCallId, storableJsonText(answer.content), answer.isError, ...decidedByValues(answeredBy)],
  );
  return rowCount === 1;
}

/** How a call ended for its result: the caller's answer, or no answer (its wait timed out, or its run was cancelled). */
export type CallerToolEnd = ({ answered: CallerToolAnswer } | { answered: false; status: 'timed_out' | 'cancelled' }) & {
  /** from the call's asking to its answer or its end */
  durationMs: number;
};

/**
 * Ends the call as it stands: an answer recorded first wins (one that came with the timer
 * included); else it is closed as `closing`. Undefined when there is no such call.
 */
export async function endCallerToolCall(
  db: Queryable, runId: string, toolCallId: string, closing: 'timed_out' | 'cancelled',
): Promise<CallerToolEnd | undefined> {
  await db.query(
    `UPDATE run_caller_tool_calls SET status = $3, answered_at = now() WHERE run_id = $1 AND tool_call_id = $2 AND status = 'pending'`,
    [runId, toolCallId, closing],
  );
  const { rows } = await db.query<{
    status: CallerToolCallStatus; answer: unknown[] | null; is_error: boolean | null; duration_ms: number;
  }>(
    `SELECT status, answer, is_error,
       GREATEST(0, floor(EXTRACT(EPOCH FROM (coalesce(answered_at, now()) - asked_at)) * 1000))::int AS duration_ms
     FROM run_caller_tool_calls WHERE run_id = $1 AND tool_call_id = $2`, [runId, toolCallId]);
  const row = rows[0];
  if (!row) return undefined;
  const durationMs = row.duration_ms;
  if (row.status === 'answered') return { answered: { content: row.answer ?? [], isError: row.is_error === true }, durationMs };
  return { answered: false, status: row.status === 'cancelled' ? 'cancelled' : 'timed_out', durationMs };
}

/** The answer, once its call's result is recorded: kept no longer than needed. */
export async function clearCallerToolAnswer(db: Queryable, runId: string, toolCallId: string): Promise<void> {
  await db.query(
    'UPDATE run_caller_tool_calls SET answer = NULL WHERE run_id = $1 AND tool_call_id = $2 AND answer IS NOT NULL', [runId, toolCallId]);
}
