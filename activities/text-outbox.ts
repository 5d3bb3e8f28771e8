import type { Logger } from '../platform/logger';
import type { Queryable } from '../store/pool';
import { publishTextPieces, type TextPiece } from '../store/runs/turn-drafts';

/**
 * The worker's outbox for the model's words: what every turn under way has to write goes out
 * together, one statement at a time, at most one every SPACING_MS. Fifty runs streaming at once
 * cost a statement (and a notification) per moment, not fifty; a turn's words wait at most
 * SPACING_MS more for it (a write after a quiet moment goes at the next tick of the event loop).
 */

/** the least time between two statements' starts: what comes meanwhile goes in the next */
export const SPACING_MS = 10;

type Piece = Omit<TextPiece, 'reset'>;
interface Waiting { pieces: Piece[]; done: () => void; failed: (err: Error) => void }

export interface TextOutbox {
  /** resolves once these pieces are written (after every piece sent to it before) */
  send(pieces: Piece[]): Promise<void>;
}

const outboxes = new WeakMap<Queryable, TextOutbox>();

export function textOutbox(db: Queryable, logger: Logger): TextOutbox {
  const known = outboxes.get(db);
  if (known) return known;
  let waiting: Waiting[] = [];
  let writing = false;
  let scheduled = false;
  let startedAt = -Infinity;

  const flush = async (): Promise<void> => {
    scheduled = false;
    if (writing || waiting.length === 0) return;
    writing = true;
    startedAt = performance.now();
    const batch = waiting;
    waiting = [];
    try {
      await publishTextPieces(db, batch.flatMap((w) => w.pieces));
      for (const w of batch) w.done();
    } catch (err) {
      logger.debug({ err: (err as Error).message, pieces: batch.length }, 'writing the model\'s words failed');
      for (const w of batch) w.failed(err as Error);
    } finally {
      writing = false;
      if (waiting.length > 0) schedule();
    }
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    const wait = startedAt + SPACING_MS - performance.now();
    if (wait > 0) setTimeout(() => void flush(), wait);
    else setImmediate(() => void flush());
  };

  const outbox: TextOutbox = {
    send(pieces) {
      return new Promise<void>((done, failed) => {
        waiting.push({ pieces, done, failed });
        schedule();
      });
    },
  };
  outboxes.set(db, outbox);
  return outbox;
}
