import type { Queryable } from '../pool';
import type { Write } from './writes';

/**
 * An LLM turn's text as the model writes it (run_turn_drafts, migration 16): each flush appends to
 * the turn's draft and announces the piece on `engine_run_text` in the same statement, so that a
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
}

/**
 * Appends `text` to the turn's draft (replacing it when `reset` or when the attempt is another one)
 * and notifies the piece. The caller keeps each piece's notification under PostgreSQL's 8,000 bytes.
 */
export async function appendTurnText(db: Queryable, piece: Omit<TextPiece, 'offset'>): Promise<void> {
  await db.query(
    `WITH draft AS (
       INSERT INTO run_turn_drafts AS d (run_id, turn, attempt, text) VALUES ($1, $2, $3, $4)
       ON CONFLICT (run_id, turn) DO UPDATE SET
         text = CASE WHEN $5 OR d.attempt <> EXCLUDED.attempt THEN EXCLUDED.text ELSE d.text || EXCLUDED.text END,
         attempt = EXCLUDED.attempt, updated_at = now()
       RETURNING char_length(text) - char_length($4) AS "offset", attempt
     )
     SELECT pg_notify('${TEXT_CHANNEL}', json_build_object('runId', $1::text, 'turn', $2::int, 'attempt', $3::int, 'offset', "offset", 'text', $4::text,
       'reset', $5::boolean OR "offset" = 0)::text) FROM draft`,
    [piece.runId, piece.turn, piece.attempt, piece.text, piece.reset === true],
  );
}

/** Announces a piece of a tool call's arguments as the model writes them; nothing is kept. */
export async function announceToolInput(db: Queryable, piece: Omit<TextPiece, 'offset' | 'reset'> & { toolCallId: string }): Promise<void> {
  await db.query(
    `SELECT pg_notify('${TEXT_CHANNEL}', json_build_object('runId', $1::text, 'turn', $2::int, 'attempt', $3::int, 'offset', 0, 'text', $4::text, 'toolCallId', $5::text)::text)`,
    [piece.runId, piece.turn, piece.attempt, piece.text, piece.toolCallId],
  );
}

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

/** A notification's payload as a piece, or undefined when it is not one. */
export function parseTextPiece(payload: string): TextPiece | undefined {
  try {
    const p = JSON.parse(payload) as Partial<TextPiece>;
    if (typeof p.runId !== 'string' || typeof p.turn !== 'number' || typeof p.attempt !== 'number' || typeof p.offset !== 'number' || typeof p.text !== 'string') return undefined;
    return {
      runId: p.runId, turn: p.turn, attempt: p.attempt, offset: p.offset, text: p.text,
      ...(p.reset ? { reset: true } : {}), ...(typeof p.toolCallId === 'string' ? { toolCallId: p.toolCallId } : {}),
    };
  } catch {
    return undefined;
  }
}
