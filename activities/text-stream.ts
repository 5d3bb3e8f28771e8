import type { Logger } from '../platform/logger';
import type { Queryable } from '../store/pool';
import { textOutbox } from './text-outbox';

/**
 * The model's words on their way out of an LLM turn's activity, paced: a piece goes out at once
 * when none went out in the last 50 ms, otherwise what came meanwhile goes 50 ms after the last
 * one, as one piece (split under PostgreSQL's notification limit). The model's stream never waits
 * for a write: pieces wait in memory, one write in flight at a time; past the bound (a slow
 * database) the pieces waiting are dropped and the next write replaces the draft with the whole
 * text so far, which a stream shows as `text_reset` then that text: never a hole.
 */

export const PACE_MS = 50;
/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more; the piece's JSON frame takes some */
const PIECE_BYTES = 7_000;
/** a character's size in a notification: written as JSON (a control character takes 6 bytes, a quote 2) */
const jsonBytes = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;
/** what may wait to be written (in characters) before the publisher gives up on pieces and replaces the draft */
const BACKLOG_CHARS = 128 * 1024;

export interface TextPublisher {
  /** the model wrote more; never blocks */
  push(text: string): void;
  /** writes what is left; resolves once every write is done (before the turn's end is written) */
  close(): Promise<void>;
  /** whether anything was written (the draft then exists) */
  wrote(): boolean;
}

/** Splits text into pieces of at most `bytes` bytes once written as JSON (UTF-8), never inside a character. */
export function splitPieces(text: string, bytes = PIECE_BYTES): string[] {
  if (jsonBytes(text) <= bytes) return text ? [text] : [];
  const pieces: string[] = [];
  let piece = '';
  let size = 0;
  for (const char of text) {
    const n = jsonBytes(char);
    if (size + n > bytes && piece) {
      pieces.push(piece);
      piece = '';
      size = 0;
    }
    piece += char;
    size += n;
  }
  if (piece) pieces.push(piece);
  return pieces;
}

/**
 * The turn's text (kept as the turn's draft), or with `toolCallId` a tool call's arguments (only
 * announced: a stream that joins later does not get the arguments so far).
 */
export function textPublisher(
  db: Queryable, logger: Logger, at: { runId: string; turn: number; attempt: number; toolCallId?: string }, now: () => number = Date.now,
): TextPublisher {
  let all = '';
  let sent = 0;
  let lastSentAt = -Infinity;
  let writing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  // A piece at offset 0 starts the draft anew: a later attempt replaces what an earlier one wrote,
  // and so does a publisher that fell behind.
  let reset = false;
  let wroteAny = false;
  let failed = false;

  const outbox = textOutbox(db, logger);
  /** characters (code points) written so far: where the next piece starts */
  let written = 0;
  const write = (text: string, replace: boolean) => {
    if (replace) written = 0;
    const pieces = splitPieces(text).map((piece, i) => {
      const offset = written;
      written += [...piece].length;
      return { ...at, offset, text: piece, ...(replace && i === 0 ? { rewrite: true } : {}) };
    });
    return outbox.send(pieces);
  };

  const flush = (): void => {
    timer = undefined;
    if (writing || failed || sent === all.length) return;
    const replace = reset;
    const text = replace ? all : all.slice(sent);
    reset = false;
    sent = all.length;
    lastSentAt = now();
    wroteAny = true;
    writing = write(text, replace).catch((err: Error) => {
      // A screen misses words; the turn itself goes on (its text is in the reply).
      failed = true;
      logger.warn({ runId: at.runId, turn: at.turn, err: err.message }, 'streaming the model\'s words failed; the turn goes on');
    }).finally(() => {
      writing = undefined;
      schedule();
    });
  };

  const schedule = (): void => {
    if (timer || writing || sent === all.length) return;
    const wait = lastSentAt + PACE_MS - now();
    if (wait <= 0) flush();
    else timer = setTimeout(flush, wait);
  };

  return {
    push(text) {
      if (!text) return;
      all += text;
      if (all.length - sent > BACKLOG_CHARS && writing) {
        // The writes fell behind: what waits is dropped, the next write replaces the draft with all of it.
        reset = true;
        sent = 0;
      }
      schedule();
    },
    async close() {
      clearTimeout(timer);
      timer = undefined;
      while (writing) await writing;
      if (!failed && sent < all.length) {
        flush();
        while (writing) await writing;
      }
    },
    wrote: () => wroteAny,
  };
}
