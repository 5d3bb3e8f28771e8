import type { ChatMessage, Usage } from '../../core/messages';
import { toIntegration, type IntegrationRow } from '../integrations/integrations';
import { type Integration } from '../../core/integration';
import { statementName, type Queryable } from '../pool';
import { storableJsonText, storableJsonValue, storableText } from '../storable-text';

/**
 * Repositories for a run's durable records. Every write is idempotent, because activities retry.
 * What a run records comes from an LLM and from MCP servers: each write makes it storable here
 * (storable-text.ts), so that no caller can forget and odd text never fails a turn or loses a result.
 */

/** One write: a statement and its values. Several go to the database as one statement (writeTogether). */
export interface Write { text: string; values: unknown[] }

/**
 * Several writes in one statement, so one round trip and one commit: all of them or none. Each is
 * a data-modifying WITH query, which PostgreSQL runs exactly once whether or not it is read.
 * The writes must not touch the same row (they see one snapshot, not each other's effects).
 */
export async function writeTogether(db: Queryable, writes: Write[]): Promise<void> {
  const { ctes, values } = asWithQueries(writes);
  const text = writes.length === 1 ? writes[0].text : `WITH ${ctes.join(', ')} SELECT 1`;
  await db.query({ text, values, name: statementName(text) });
}

/** Writes as WITH queries `w0 AS (…)`, `w1 AS (…)`, their parameters renumbered after one another's. */
export function asWithQueries(writes: Write[]): { ctes: string[]; values: unknown[] } {
  const values: unknown[] = [];
  const ctes = writes.map((w, i) => {
    const offset = values.length;
    values.push(...w.values);
    return `w${i} AS (${w.text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
  return { ctes, values };
}

/**
 * A CTE for statements that write progress only (a step's start event, an attempt count): read
 * FROM it, it makes that statement's commit return without waiting for the WAL flush (for this
 * transaction alone: set_config's third argument). PostgreSQL keeps commits in order, so such a
 * write is lost only if PostgreSQL itself stops before any later commit is flushed; the step's
 * final write, flushed as usual, writes the same rows again where they are missing. Flushes are
 * half of PostgreSQL's CPU time per run on a small VM (bench:load with synchronous_commit off for
 * everything: 23 against 43 ms); these are 10 of a run's 23 commits in that benchmark.
 */
export const PROGRESS_ONLY = "progress_only AS (SELECT set_config('synchronous_commit', 'off', true))";

export interface RunRecord {
  id: string;
  threadId: string;
  agentId: string;
  input: string;
  idempotencyKey: string | null;
  requestHash: string | null;
  createdAt: string;
}

export interface RunRow {
  id: string; thread_id: string; agent_id: string; input: string; idempotency_key: string | null;
  request_hash: string | null;
  /** a Date from the driver, text from row_to_json */
  created_at: Date | string;
}
export const toRun = (r: RunRow): RunRecord => ({
  id: r.id, threadId: r.thread_id, agentId: r.agent_id, input: r.input, idempotencyKey: r.idempotency_key,
  requestHash: r.request_hash, createdAt: new Date(r.created_at).toISOString(),
});

/** Returns undefined when a run with this id already exists (a concurrent Idempotency-Key request won). */
export async function insertRun(db: Queryable, run: Omit<RunRecord, 'createdAt'>): Promise<RunRecord | undefined> {
  const { rows } = await db.query<RunRow>(
    `INSERT INTO runs (id, thread_id, agent_id, input, idempotency_key, request_hash)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING *`,
    [run.id, run.threadId, run.agentId, run.input, run.idempotencyKey, run.requestHash],
  );
  return rows[0] && toRun(rows[0]);
}

export async function findRun(db: Queryable, id: string): Promise<RunRecord | undefined> {
  const { rows } = await db.query<RunRow>('SELECT * FROM runs WHERE id = $1', [id]);
  return rows[0] && toRun(rows[0]);
}

// ---- transcript -------------------------------------------------------------------------

export function runMessageWrite(runId: string, turn: number, slot: number, message: ChatMessage): Write & { bytes: number } {
  const json = storableJsonText(message);
  const bytes = Buffer.byteLength(json);
  return {
    text: `INSERT INTO run_messages (run_id, turn, slot, message, bytes) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (run_id, turn, slot) DO UPDATE SET message = EXCLUDED.message, bytes = EXCLUDED.bytes`,
    values: [runId, turn, slot, json, bytes],
    bytes,
  };
}

export interface StoredRunMessage { turn: number; slot: number; message: ChatMessage }

export async function runTranscript(db: Queryable, runId: string, untilTurn = 2_147_483_647): Promise<StoredRunMessage[]> {
  const text = 'SELECT turn, slot, message FROM run_messages WHERE run_id = $1 AND turn <= $2 ORDER BY turn, slot';
  const { rows } = await db.query<StoredRunMessage>({ name: statementName(text), text, values: [runId, untilTurn] });
  return rows;
}

export async function getRunMessage(db: Queryable, runId: string, turn: number, slot: number): Promise<ChatMessage | undefined> {
  const { rows } = await db.query<{ message: ChatMessage }>(
    'SELECT message FROM run_messages WHERE run_id = $1 AND turn = $2 AND slot = $3', [runId, turn, slot],
  );
  return rows[0]?.message;
}

// ---- turns ------------------------------------------------------------------------------

/** Counts LLM invocations per turn, so that re-executions after a crash are visible. */
export const turnAttemptWrite = (runId: string, turn: number): Write => ({
  text: `INSERT INTO run_turns (run_id, turn, attempts) VALUES ($1, $2, 1)
     ON CONFLICT (run_id, turn) DO UPDATE SET attempts = run_turns.attempts + 1`,
  values: [runId, turn],
});

/** Written whole, not as an update: the turn's start (its attempt count) may have been lost with its unflushed commit (PROGRESS_ONLY). */
export const turnCompletedWrite = (runId: string, turn: number, usage: Usage, toolCallCount: number): Write => ({
  text: `INSERT INTO run_turns (run_id, turn, attempts, input_tokens, output_tokens, tool_call_count, completed_at)
     VALUES ($1, $2, 1, $3, $4, $5, now())
     ON CONFLICT (run_id, turn) DO UPDATE SET input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
       tool_call_count = EXCLUDED.tool_call_count, completed_at = EXCLUDED.completed_at`,
  values: [runId, turn, usage.inputTokens, usage.outputTokens, toolCallCount],
});

export async function runTurns(db: Queryable, runId: string): Promise<{ turn: number; attempts: number; completed: boolean }[]> {
  const { rows } = await db.query<{ turn: number; attempts: number; completed: boolean }>(
    'SELECT turn, attempts, completed_at IS NOT NULL AS completed FROM run_turns WHERE run_id = $1 ORDER BY turn', [runId],
  );
  return rows;
}

// ---- tool calls -------------------------------------------------------------------------

export interface ToolCallRecord {
  id: string;
  turn: number;
  slot: number;
  name: string;
  type: string;
  integrationId: string | null;
  status: 'ok' | 'error';
  durationMs: number;
  result: string;
  resultBytes: number;
}

export const toolCallWrite = (runId: string, rec: ToolCallRecord): Write => ({
  text: `INSERT INTO run_tool_calls (run_id, turn, slot, tool_call_id, name, type, integration_id, status, duration_ms, result_preview, result_bytes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (run_id, turn, slot) DO UPDATE SET status = EXCLUDED.status, duration_ms = EXCLUDED.duration_ms,
       result_preview = EXCLUDED.result_preview, result_bytes = EXCLUDED.result_bytes`,
  values: [runId, rec.turn, rec.slot, storableText(rec.id), storableText(rec.name), rec.type, rec.integrationId, rec.status, rec.durationMs,
    storableText(rec.result), rec.resultBytes],
});

/** run_tool_calls rows as the run object lists its tool calls: one JSON array, in order (NULL without rows). */
export const TOOL_CALLS_JSON = `json_agg(json_build_object(
    'id', tool_call_id, 'turn', turn, 'name', name, 'type', type, 'integrationId', integration_id, 'status', status,
    'durationMs', duration_ms, 'result', result_preview, 'resultBytes', result_bytes) ORDER BY turn, slot)`;

export interface ToolCallRow {
  tool_call_id: string; turn: number; slot: number; name: string; type: string; integration_id: string | null;
  status: 'ok' | 'error'; duration_ms: number; result_preview: string; result_bytes: number;
}
export const toToolCall = (r: ToolCallRow): ToolCallRecord => ({
  id: r.tool_call_id, turn: r.turn, slot: r.slot, name: r.name, type: r.type, integrationId: r.integration_id,
  status: r.status, durationMs: r.duration_ms, result: r.result_preview, resultBytes: r.result_bytes,
});

/**
 * A tool call by reference, in one round trip: its outcome if one is stored (a worker died after
 * storing it but before reporting), and the assistant message of its turn, which holds its arguments.
 * Given the call's integration, its row comes too; given its start event, the event is recorded in
 * the same statement (once, only for a call that exists, as progress: PROGRESS_ONLY).
 */
export async function findToolCallAndRequest(
  db: Queryable, runId: string, turn: number, slot: number,
  also: { integrationId?: string; started?: { seq: number; data: Record<string, unknown> } } = {},
): Promise<{ stored?: ToolCallRecord; assistant?: ChatMessage; integration?: Integration }> {
  const text = `WITH ${PROGRESS_ONLY}, started AS (
      INSERT INTO run_events (run_id, seq, type, data)
      SELECT $1, $4, 'tool_call_started', $5::jsonb FROM progress_only
      WHERE $5::jsonb IS NOT NULL AND EXISTS (SELECT 1 FROM run_messages WHERE run_id = $1 AND turn = $2 AND slot = 0)
      ON CONFLICT (run_id, seq) DO NOTHING)
    SELECT (SELECT row_to_json(c) FROM run_tool_calls c WHERE run_id = $1 AND turn = $2 AND slot = $3) AS stored,
      (SELECT message FROM run_messages WHERE run_id = $1 AND turn = $2 AND slot = 0) AS assistant,
      (SELECT row_to_json(i) FROM integrations i WHERE id = $6) AS integration`;
  const { started, integrationId } = also;
  const { rows } = await db.query<{ stored: ToolCallRow | null; assistant: ChatMessage | null; integration: IntegrationRow | null }>({
    name: statementName(text), text,
    values: [runId, turn, slot, started?.seq ?? 0, started ? storableJsonText(started.data) : null, integrationId ?? null],
  });
  const { stored, assistant, integration } = rows[0];
  return { ...(stored ? { stored: toToolCall(stored) } : {}), ...(assistant ? { assistant } : {}), ...(integration ? { integration: toIntegration(integration) } : {}) };
}

export async function listToolCalls(db: Queryable, runId: string): Promise<ToolCallRecord[]> {
  const { rows } = await db.query<ToolCallRow>('SELECT * FROM run_tool_calls WHERE run_id = $1 ORDER BY turn, slot', [runId]);
  return rows.map(toToolCall);
}

// ---- events -----------------------------------------------------------------------------

export type RunEventType = 'run_started' | 'turn_started' | 'turn_ended' | 'tool_call_started' | 'tool_call_ended'
  | 'approval_requested' | 'approval_resolved' | 'run_ended';

export interface RunEvent { seq: number; type: RunEventType; data: Record<string, unknown>; createdAt: string }

export const eventWrite = (runId: string, seq: number, type: RunEventType, data: Record<string, unknown> = {}): Write => ({
  text: 'INSERT INTO run_events (run_id, seq, type, data) VALUES ($1, $2, $3, $4) ON CONFLICT (run_id, seq) DO NOTHING',
  values: [runId, seq, type, storableJsonText(data)],
});

export async function appendEvent(db: Queryable, runId: string, seq: number, type: RunEventType, data: Record<string, unknown> = {}): Promise<void> {
  await writeTogether(db, [eventWrite(runId, seq, type, data)]);
}

/** Adds fields to an event already written (figures known only after it); idempotent like every write here. */
export async function mergeEventData(db: Queryable, runId: string, seq: number, data: Record<string, unknown>): Promise<void> {
  await db.query('UPDATE run_events SET data = data || $3::jsonb WHERE run_id = $1 AND seq = $2', [runId, seq, storableJsonText(data)]);
}

export async function listEvents(db: Queryable, runId: string, afterSeq = 0): Promise<RunEvent[]> {
  const { rows } = await db.query<{ seq: number; type: RunEventType; data: Record<string, unknown>; created_at: Date }>(
    'SELECT seq, type, data, created_at FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq', [runId, afterSeq],
  );
  return rows.map((r) => ({ seq: r.seq, type: r.type, data: r.data, createdAt: r.created_at.toISOString() }));
}

// ---- snapshots --------------------------------------------------------------------------

/** The write, its size, and the value as stored (storable text: what a later read returns). */
export function snapshotWrite<T>(runId: string, kind: string, data: T): Write & { bytes: number; stored: T } {
  const { text: json, value: stored } = storableJsonValue(data);
  const bytes = Buffer.byteLength(json);
  return {
    text: `INSERT INTO run_snapshots (run_id, kind, data, bytes) VALUES ($1, $2, $3, $4)
     ON CONFLICT (run_id, kind) DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes`,
    values: [runId, kind, json, bytes],
    bytes,
    stored,
  };
}

export async function putSnapshot(db: Queryable, runId: string, kind: string, data: unknown): Promise<number> {
  const write = snapshotWrite(runId, kind, data);
  await writeTogether(db, [write]);
  return write.bytes;
}

export async function getSnapshot<T>(db: Queryable, runId: string, kind: string): Promise<T | undefined> {
  const { rows } = await db.query<{ data: T }>('SELECT data FROM run_snapshots WHERE run_id = $1 AND kind = $2', [runId, kind]);
  return rows[0]?.data;
}

export async function getSnapshotWithBytes<T>(db: Queryable, runId: string, kind: string): Promise<{ data: T; bytes: number } | undefined> {
  const { rows } = await db.query<{ data: T; bytes: number }>('SELECT data, bytes FROM run_snapshots WHERE run_id = $1 AND kind = $2', [runId, kind]);
  return rows[0];
}

// ---- results ----------------------------------------------------------------------------

export interface RunResult {
  runId: string;
  threadId: string;
  agentId: string;
  status: 'completed' | 'failed' | 'cancelled';
  stopReason: string | null;
  output: string | null;
  error: { type: string; message: string } | null;
  turns: number;
  usage: Usage;
  toolCalls: (Omit<ToolCallRecord, 'slot'>)[];
  createdAt: string;
  endedAt: string;
}

interface RunResultRow {
  run_id: string; thread_id: string; agent_id: string; status: RunResult['status']; stop_reason: string | null;
  output: string | null; error: RunResult['error']; turns: number; usage: Usage; tool_calls: RunResult['toolCalls'];
  created_at: Date; ended_at: Date;
}

export async function findRunResult(db: Queryable, runId: string): Promise<RunResult | undefined> {
  const { rows } = await db.query<RunResultRow>('SELECT * FROM run_results WHERE run_id = $1', [runId]);
  const r = rows[0];
  return r && {
    runId: r.run_id, threadId: r.thread_id, agentId: r.agent_id, status: r.status, stopReason: r.stop_reason,
    output: r.output, error: r.error, turns: r.turns, usage: r.usage, toolCalls: r.tool_calls,
    createdAt: r.created_at.toISOString(), endedAt: r.ended_at.toISOString(),
  };
}
