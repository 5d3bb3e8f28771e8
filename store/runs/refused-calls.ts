import { storableJsonText, storableText } from '../storable-text';
import type { Write } from './writes';

/**
 * The tool calls of a turn past its limit (limits.maxToolCallsPerTurn), answered by the LLM turn
 * itself with one text, written in the turn's own statement: each call's result in run_messages,
 * its row in run_tool_calls and its tool_call_started and tool_call_ended, as the run shows a call
 * that failed. A turn may refuse many (a model asked 100,000): one row set per table, from arrays.
 */
export interface RefusedCall {
  /** the call's result's slot in the turn (its index in the reply, plus one) */
  slot: number;
  id: string;
  name: string;
  /** the tool kind of the name among the tools the turn offered, else `unknown` */
  type: string;
  integrationId: string | null;
  /** tool_call_started's number; tool_call_ended's is the next */
  seq: number;
}

export function refusedCallWrites(runId: string, turn: number, calls: RefusedCall[], text: string): Write[] {
  const content = storableText(text);
  const ids = calls.map((c) => storableText(c.id));
  const names = calls.map((c) => storableText(c.name));
  const types = calls.map((c) => c.type);
  const integrations = calls.map((c) => c.integrationId);
  const slots = calls.map((c) => c.slot);
  // as runMessageWrite counts a message: its JSON text
  const bytes = calls.map((_, i) => Buffer.byteLength(storableJsonText({ role: 'tool', toolCallId: ids[i], name: names[i], content })));
  return [{
    text: `INSERT INTO run_messages (run_id, turn, slot, message, bytes)
       SELECT $1, $2, c.slot, jsonb_build_object('role', 'tool', 'toolCallId', c.id, 'name', c.name, 'content', $6::text), c.bytes
       FROM unnest($3::int[], $4::text[], $5::text[], $7::int[]) AS c(slot, id, name, bytes)
       ON CONFLICT (run_id, turn, slot) DO NOTHING`,
    values: [runId, turn, slots, ids, names, content, bytes],
  }, {
    text: `INSERT INTO run_tool_calls (run_id, turn, slot, tool_call_id, name, type, integration_id, status, duration_ms, result_preview,
                                  result_bytes)
       SELECT $1, $2, c.slot, c.id, c.name, c.type, c.integration_id, 'error', 0, $8, $9
       FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[]) AS c(slot, id, name, type, integration_id)
       ON CONFLICT (run_id, turn, slot) DO NOTHING`,
    values: [runId, turn, slots, ids, names, types, integrations, content, Buffer.byteLength(content)],
  }, {
    text: `INSERT INTO run_events (run_id, seq, type, data)
       SELECT $1, c.seq + e.n, e.type,
         jsonb_build_object('turn', $2::int, 'toolCallId', c.id, 'name', c.name, 'toolType', c.type, 'integrationId', c.integration_id)
           || e.data
       FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[]) AS c(seq, id, name, type, integration_id)
       CROSS JOIN (VALUES (0, 'tool_call_started', '{}'::jsonb),
                          (1, 'tool_call_ended', '{"status": "error", "durationMs": 0}'::jsonb)) AS e(n, type, data)
       ON CONFLICT (run_id, seq) DO NOTHING`,
    values: [runId, turn, calls.map((c) => c.seq), ids, names, types, integrations],
  }];
}
