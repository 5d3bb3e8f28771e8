import type { ChatMessage } from '../../core/messages';
import { statementName, type Queryable } from '../pool';
import { storableJsonText } from '../storable-text';
import type { Write } from './writes';

/** A run's transcript (run_messages): each turn's reply and tool results, in order, as the LLM reads them. */

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
