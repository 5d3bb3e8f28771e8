import type { Queryable } from '../pool';
import {
  MESSAGE_PREVIEW_CHARS, messagePreviewColumns, toMessagePreview, type MessagePreview, type MessagePreviewRow,
} from '../threads/thread-messages';

/**
 * A run's own conversation as a person reads it, while it runs and after: its input and its
 * transcript (run_messages), which the thread's messages receive only when the run ends. Texts are
 * cut in SQL like the thread's (MESSAGE_PREVIEW_CHARS), each saying how large it really is.
 */

/** A message of the run's transcript: turn t's reply is slot 0, the result of its i-th tool call slot i+1. */
export interface RunMessageView extends MessagePreview { turn: number; slot: number }

export interface RunMessagePage {
  input: { content: string; contentBytes: number; contentTruncated: boolean };
  messages: RunMessageView[];
  /** the last message's place, to read on from; null on the last page */
  next: { turn: number; slot: number } | null;
}

interface InputRow { content: string; chars: number; bytes: number }

/**
 * The run's input and its messages after (turn, slot) `after`, in order; undefined when the tenant
 * has no such run (another tenant's run included).
 */
export async function pageRunMessages(
  db: Queryable, runId: string, tenantId: string, req: { after: { turn: number; slot: number }; limit: number },
): Promise<RunMessagePage | undefined> {
  const input = await db.query<InputRow>(
    `SELECT left(input, $2) AS content, char_length(input) AS chars, octet_length(input) AS bytes FROM runs
     WHERE id = $1 AND tenant_id = $3`,
    [runId, MESSAGE_PREVIEW_CHARS, tenantId],
  );
  if (!input.rows[0]) return undefined;
  // Turn 0 is the input again (the first thing the LLM reads), given above from the run's row, which
  // has it from the start: the transcript has it only once the run is prepared.
  const { rows } = await db.query<MessagePreviewRow & { turn: number; slot: number }>(
    `SELECT m.turn, m.slot, ${messagePreviewColumns('m', '$4')}
     FROM run_messages m
     WHERE m.run_id = $1 AND m.turn > 0 AND (m.turn, m.slot) > ($2, $3)
     ORDER BY m.turn, m.slot LIMIT $5`,
    [runId, req.after.turn, req.after.slot, MESSAGE_PREVIEW_CHARS, req.limit + 1],
  );
  const messages = rows.slice(0, req.limit).map((r) => ({ turn: r.turn, slot: r.slot, ...toMessagePreview(r) }));
  const last = messages.at(-1);
  const { content, chars, bytes } = input.rows[0];
  return {
    input: { content, contentBytes: bytes, contentTruncated: chars > MESSAGE_PREVIEW_CHARS },
    messages,
    next: rows.length > req.limit && last ? { turn: last.turn, slot: last.slot } : null,
  };
}
