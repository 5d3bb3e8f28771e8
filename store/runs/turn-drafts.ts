import { statementName, type Queryable } from '../pool';
import type { Write } from './writes';
import { storableText } from '../storable-text';

/**
 * An LLM turn's text as the model writes it (run_turn_drafts, migration 16): each write appends to
 * the turn's draft and announces the pieces on `engine_run_text` in the same statement, so that a
 * stream that reads the draft and then hears the pieces after it misses nothing and repeats
 * nothing (each piece says where it starts). Never workflow history, never run_events.
 */

export const TEXT_CHANNEL = 'engine_run_text';

/** One piece of a turn's text: `offset` is where it starts in the attempt's text, in characters (code points, as PostgreSQL counts). */
export interface TextPiece {
  runId: string;
  turn: number;
  attempt: number;
  offset: number;
  text: string;
  /** the piece replaces the attempt's text so far (a new attempt, or a publisher that fell behind) */
  reset?: boolean;
  /** a piece of this tool call's arguments (JSON text), not of the turn's text: announced, never kept */
  toolCallId?: string;
  /** the first piece of a draft written anew by a writer that fell behind: a follower shows the turn's words again from here */
  rewrite?: boolean;
}

/** PostgreSQL refuses a notification's payload of 8,000 bytes or more. */
const PAYLOAD_BYTES = 7_990;

/**
 * Writes pieces of the turns' texts of any runs, in one statement: each run's pieces are added to
 * its turn's draft (a piece at offset 0 starts it anew: a new attempt, or a writer that fell
 * behind), and the pieces are announced, in order, on `engine_run_text`: as few notifications as
 * fit them, each a JSON array of pieces under PostgreSQL's limit. A tool call's pieces are only
 * announced. Offsets are counted by the writer, one write in flight per turn, so the draft and the
 * pieces agree. The caller keeps each piece, written as JSON, under 7,000 bytes. What PostgreSQL
 * cannot hold (NUL, a lone surrogate) is replaced as in the stored turn, one character for one.
 */
export async function publishTextPieces(db: Queryable, written: Omit<TextPiece, 'reset'>[]): Promise<void> {
  if (written.length === 0) return;
  const pieces = written.map((p) => ({ ...p, text: storableText(p.text) }));
  const column = <T>(pick: (p: Omit<TextPiece, 'reset'>) => T) => pieces.map(pick);
  await db.query({ name: statementName(PUBLISH_SQL), text: PUBLISH_SQL, values: [
    column((p) => p.runId), column((p) => p.turn), column((p) => p.attempt), column((p) => p.offset), column((p) => p.text),
    column((p) => p.toolCallId ?? null), payloadsOf(pieces),
  ] });
}

/** The notifications' payloads: the pieces in order, as JSON arrays, each under the limit. */
function payloadsOf(pieces: Omit<TextPiece, 'reset'>[]): string[] {
  const payloads: string[] = [];
  let open: string[] = [];
  let size = 2;
  for (const p of pieces) {
    const json = JSON.stringify({
      runId: p.runId, turn: p.turn, attempt: p.attempt, offset: p.offset, text: p.text,
      ...(p.offset === 0 && !p.toolCallId ? { reset: true } : {}), ...(p.toolCallId ? { toolCallId: p.toolCallId } : {}),
      ...(p.rewrite ? { rewrite: true } : {}),
    });
    const bytes = Buffer.byteLength(json) + 1;
    if (open.length > 0 && size + bytes > PAYLOAD_BYTES) {
      payloads.push(`[${open.join(',')}]`);
      open = [];
      size = 2;
    }
    open.push(json);
    size += bytes;
  }
  if (open.length > 0) payloads.push(`[${open.join(',')}]`);
  return payloads;
}

/** Prepared once per connection (a statement per moment of streaming: its planning would cost more than its work). */
const PUBLISH_SQL = `WITH p AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::text[], $6::text[]) WITH ORDINALITY
         AS p(run_id, turn, attempt, "offset", text, tool_call_id, ord)
     ), draft AS (
       INSERT INTO run_turn_drafts AS d (run_id, turn, attempt, text)
       SELECT run_id, turn, max(attempt), string_agg(text, '' ORDER BY ord) FROM p
       -- a turn still writing when its run ended (cancelled): the run's end took the drafts, none comes back
       WHERE tool_call_id IS NULL AND NOT EXISTS (SELECT 1 FROM run_results r WHERE r.run_id = p.run_id) GROUP BY run_id, turn
       ON CONFLICT (run_id, turn) DO UPDATE SET
         text = CASE WHEN d.attempt <> EXCLUDED.attempt
             OR (SELECT min(p."offset") FROM p WHERE p.run_id = d.run_id AND p.turn = d.turn AND p.tool_call_id IS NULL) = 0
           THEN EXCLUDED.text ELSE d.text || EXCLUDED.text END,
         attempt = EXCLUDED.attempt, updated_at = now()
       RETURNING 1
     )
     SELECT count(pg_notify('${TEXT_CHANNEL}', payload)), (SELECT count(*) FROM draft)
     FROM unnest($7::text[]) WITH ORDINALITY AS n(payload, ord)`;

/** The drafts of the run's turns still being written, oldest first. */
export async function readTurnDrafts(db: Queryable, runId: string): Promise<TextPiece[]> {
  const { rows } = await db.query<{ turn: number; attempt: number; text: string }>(
    'SELECT turn, attempt, text FROM run_turn_drafts WHERE run_id = $1 ORDER BY turn', [runId],
  );
  return rows.map((r) => ({ runId, turn: r.turn, attempt: r.attempt, offset: 0, text: r.text }));
}

/** The turn has ended: its draft is of no more use (written with the turn's end). */
export const dropTurnDraftWrite = (runId: string, turn: number): Write => ({
  text: 'DELETE FROM run_turn_drafts WHERE run_id = $1 AND turn = $2', values: [runId, turn],
});

/** A notification's pieces (an array of them, or one piece as workers sent before), skipping what is not one. */
export function parseTextPieces(payload: string): TextPiece[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return [];
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((p: Partial<TextPiece>) => {
    if (!p || typeof p.runId !== 'string' || typeof p.turn !== 'number' || typeof p.attempt !== 'number') return [];
    if (typeof p.offset !== 'number' || typeof p.text !== 'string') return [];
    return [{
      runId: p.runId, turn: p.turn, attempt: p.attempt, offset: p.offset, text: p.text,
      ...(p.reset ? { reset: true } : {}), ...(typeof p.toolCallId === 'string' && p.toolCallId ? { toolCallId: p.toolCallId } : {}),
      ...(p.rewrite === true && p.offset === 0 ? { rewrite: true } : {}),
    }];
  });
}
