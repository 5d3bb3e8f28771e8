import type { ChatMessage } from '../../core/messages';
import type { RecordedCall } from '../../core/replay';
import { toIntegration, type IntegrationRow } from '../integrations/integrations';
import type { Integration } from '../../core/integration';
import { statementName, type Queryable } from '../pool';
import { storableJsonText, storableText } from '../storable-text';
import { PROGRESS_ONLY, type Write } from './writes';

/** A run's tool calls (run_tool_calls): what each call asked, and its result, stored once. */

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
  /** a sub-agent's call: the run it started */
  childRunId?: string;
  /** a replay's call answered from the recording (migration 38): with the original's result, or none was recorded */
  replayed?: 'recorded' | 'not_recorded';
  /** with `replayed` "recorded": the original's call whose result it took */
  recordedFrom?: RecordedCall;
}

export const toolCallWrite = (runId: string, rec: ToolCallRecord): Write => ({
  text: `INSERT INTO run_tool_calls (run_id, turn, slot, tool_call_id, name, type, integration_id, status, duration_ms, result_preview,
                                result_bytes, child_run_id, replayed, recorded_turn, recorded_slot)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (run_id, turn, slot) DO UPDATE SET status = EXCLUDED.status, duration_ms = EXCLUDED.duration_ms,
       result_preview = EXCLUDED.result_preview, result_bytes = EXCLUDED.result_bytes`,
  values: [runId, rec.turn, rec.slot, storableText(rec.id), storableText(rec.name), rec.type, rec.integrationId, rec.status, rec.durationMs,
    storableText(rec.result), rec.resultBytes, rec.childRunId ?? null, rec.replayed ?? null, rec.recordedFrom?.turn ?? null,
    rec.recordedFrom?.slot ?? null],
});

/** run_tool_calls rows as the run object lists its tool calls: one JSON array, in order (NULL without rows). */
export const TOOL_CALLS_JSON = `json_agg(json_build_object(
    'id', tool_call_id, 'turn', turn, 'name', name, 'type', type, 'integrationId', integration_id, 'status', status,
    'durationMs', duration_ms, 'result', result_preview, 'resultBytes', result_bytes, 'childRunId', child_run_id, 'replayed', replayed)
    ORDER BY turn, slot)`;

export interface ToolCallRow {
  tool_call_id: string; turn: number; slot: number; name: string; type: string; integration_id: string | null;
  status: 'ok' | 'error'; duration_ms: number; result_preview: string; result_bytes: number; child_run_id?: string | null;
  replayed?: 'recorded' | 'not_recorded' | null; recorded_turn?: number | null; recorded_slot?: number | null;
}

export const toToolCall = (r: ToolCallRow): ToolCallRecord => ({
  id: r.tool_call_id, turn: r.turn, slot: r.slot, name: r.name, type: r.type, integrationId: r.integration_id,
  status: r.status, durationMs: r.duration_ms, result: r.result_preview, resultBytes: r.result_bytes,
  ...(r.child_run_id ? { childRunId: r.child_run_id } : {}),
  ...(r.replayed ? { replayed: r.replayed } : {}),
  ...(r.recorded_turn && r.recorded_slot ? { recordedFrom: { turn: r.recorded_turn, slot: r.recorded_slot } } : {}),
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
  return {
    ...(stored ? { stored: toToolCall(stored) } : {}), ...(assistant ? { assistant } : {}),
    ...(integration ? { integration: toIntegration(integration) } : {}),
  };
}

export async function listToolCalls(db: Queryable, runId: string): Promise<ToolCallRecord[]> {
  const { rows } = await db.query<ToolCallRow>('SELECT * FROM run_tool_calls WHERE run_id = $1 ORDER BY turn, slot', [runId]);
  return rows.map(toToolCall);
}
