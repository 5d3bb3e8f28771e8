import { randomUUID } from 'node:crypto';
import { secretKeys } from '../../platform/secrets/key-ring';
import { isSealed, open, seal } from '../../platform/secrets/secret-box';
import type { Queryable } from '../pool';
import { storableJsonText, storableText } from '../storable-text';
import type { DecidedBy } from '../../core/approval';
import { decidedByValues, toDecidedBy } from '../approvals';

/**
 * Questions MCP servers ask during tool calls (elicitation/create), as a run's pending inputs.
 * The worker whose call waits inserts the row and waits; the API answers it; the worker reads the
 * answer and clears it. Every status change wakes the waiting worker (the trigger of migration 7).
 */

export type InputAction = 'accept' | 'decline' | 'cancel';
export type InputStatus = 'pending' | InputAction | 'expired';

export interface RunInput {
  inputId: string;
  runId: string;
  toolCallId: string;
  mode: 'form' | 'url';
  message: string;
  /** form mode: the flat object schema the content must match */
  requestedSchema?: Record<string, unknown>;
  /** url mode: where the user completes the interaction */
  url?: string;
  status: InputStatus;
  requestedAt: string;
  expiresAt: string;
  answeredAt: string | null;
  /** who answered (migration 26); null while pending, when it expired, for answers through /mcp and older rows */
  decidedBy: DecidedBy | null;
  /** a 2026-era server's question, waited for by the workflow (store/runs/input-rounds.ts); absent when a call's activity waits */
  roundId?: string;
}

interface RunInputRow {
  input_id: string; run_id: string; tool_call_id: string; mode: 'form' | 'url'; message: string;
  requested_schema: Record<string, unknown> | null; url: string | null; status: InputStatus; answer: unknown;
  requested_at: Date; expires_at: Date; answered_at: Date | null; round_id?: string | null;
  decided_by_id?: string | null; decided_by_name?: string | null;
}

const toInput = (r: RunInputRow): RunInput => ({
  inputId: r.input_id, runId: r.run_id, toolCallId: r.tool_call_id, mode: r.mode, message: r.message,
  ...(r.requested_schema ? { requestedSchema: r.requested_schema } : {}), ...(r.url ? { url: r.url } : {}),
  status: r.status, requestedAt: r.requested_at.toISOString(), expiresAt: r.expires_at.toISOString(),
  answeredAt: r.answered_at?.toISOString() ?? null, decidedBy: toDecidedBy(r), ...(r.round_id ? { roundId: r.round_id } : {}),
});

/**
 * A question still waits only while its tool call has not ended: a call whose worker died ends
 * through the workflow (its result is recorded) and leaves its question behind.
 */
const STILL_WAITING = `NOT EXISTS (SELECT 1 FROM run_tool_calls c WHERE c.run_id = i.run_id AND c.tool_call_id = i.tool_call_id)
  AND NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = i.run_id)`;

export const answerContext = (inputId: string) => `run_inputs.answer:${inputId}`;

export interface NewRunInput {
  runId: string;
  toolCallId: string;
  mode: 'form' | 'url';
  message: string;
  requestedSchema?: Record<string, unknown>;
  url?: string;
  waitMs: number;
}

export async function insertRunInput(db: Queryable, input: NewRunInput): Promise<RunInput> {
  const { rows } = await db.query<RunInputRow>(
    `INSERT INTO run_inputs (input_id, run_id, tool_call_id, mode, message, requested_schema, url, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8::double precision / 1000)) RETURNING *`,
    [`inp_${randomUUID().replace(/-/g, '')}`, input.runId, input.toolCallId, input.mode, storableText(input.message),
      input.requestedSchema ? storableJsonText(input.requestedSchema) : null, input.url ?? null, input.waitMs],
  );
  return toInput(rows[0]);
}

export async function findRunInput(db: Queryable, runId: string, inputId: string): Promise<RunInput | undefined> {
  const { rows } = await db.query<RunInputRow>('SELECT * FROM run_inputs WHERE input_id = $1 AND run_id = $2', [inputId, runId]);
  return rows[0] && toInput(rows[0]);
}

/** The run's questions still waiting for an answer, oldest first. */
export async function pendingRunInputs(db: Queryable, runId: string): Promise<RunInput[]> {
  const { rows } = await db.query<RunInputRow>(
    `SELECT * FROM run_inputs i WHERE run_id = $1 AND status = 'pending' AND expires_at > now() AND ${STILL_WAITING}
     ORDER BY requested_at, input_id`, [runId],
  );
  return rows.map(toInput);
}

/**
 * Records the answer if the question still waits; undefined when it was answered, expired or
 * withdrawn meanwhile (the first answer wins). Content is sealed when the process has a key.
 */
export async function answerRunInput(
  db: Queryable, runId: string, inputId: string, action: InputAction, content?: Record<string, unknown>, decidedBy?: DecidedBy | null,
): Promise<RunInput | undefined> {
  const ring = secretKeys();
  const answer = content === undefined ? null
    : ring.current ? seal(ring, JSON.stringify(content), answerContext(inputId)) : { plain: content };
  const { rows } = await db.query<RunInputRow>(
    `UPDATE run_inputs SET status = $3, answer = $4, answered_at = now(), decided_by_id = $5, decided_by_name = $6
     WHERE input_id = $1 AND run_id = $2 AND status = 'pending' AND expires_at > now() AND ${STILL_WAITING.replace(/\bi\./g, 'run_inputs.')}
     RETURNING *`,
    [inputId, runId, action, answer && JSON.stringify(answer), ...decidedByValues(decidedBy)],
  );
  return rows[0] && toInput(rows[0]);
}

export type InputOutcome =
  | { status: 'pending' }
  | { status: InputAction; content?: Record<string, unknown> }
  | { status: 'expired' };

/** The answer, once: a relayed answer's content is cleared, so that it is kept no longer than needed. */
export async function takeRunInputAnswer(db: Queryable, inputId: string): Promise<InputOutcome> {
  const { rows } = await db.query<{ status: InputStatus; answer: unknown }>(
    'SELECT status, answer FROM run_inputs WHERE input_id = $1',
    [inputId],
  );
  const row = rows[0];
  if (!row || row.status === 'expired') return { status: 'expired' };
  if (row.status === 'pending') return { status: 'pending' };
  if (row.answer) await db.query('UPDATE run_inputs SET answer = NULL WHERE input_id = $1', [inputId]);
  return { status: row.status, ...(row.answer ? { content: openAnswer(inputId, row.answer) } : {}) };
}

export function openAnswer(inputId: string, stored: unknown): Record<string, unknown> {
  if (isSealed(stored)) return JSON.parse(open(secretKeys(), stored, answerContext(inputId))) as Record<string, unknown>;
  return (stored as { plain: Record<string, unknown> }).plain;
}

/** Ends a question nobody answered in time (or whose call ended); false when an answer came first. */
export async function closeRunInput(db: Queryable, inputId: string, status: 'expired' | 'cancel'): Promise<boolean> {
  const { rowCount } = await db.query(
    "UPDATE run_inputs SET status = $2, answered_at = now() WHERE input_id = $1 AND status = 'pending'", [inputId, status],
  );
  return rowCount === 1;
}
