import type { Logger } from '../platform/logger';
import type { Queryable } from '../store/pool';
import { textOutbox, type TextOutbox } from './text-outbox';

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

/** Where a publisher's pieces go: the turn's attempt, and a tool call when they are its arguments. */
export interface TextAt {
  runId: string;
  turn: number;
  attempt: number;
  toolCallId?: string;
}

/** Told, for each chunk pushed, the seconds from its arrival to the write that published it (none for a write that failed). */
export type PublishedLag = (seconds: number) => void;

/**
 * The turn's text (kept as the turn's draft), or with `toolCallId` a tool call's arguments (only
 * announced: a stream that joins later does not get the arguments so far).
 */
export function textPublisher(
  db: Queryable, logger: Logger, at: TextAt, now: () => number = Date.now, lag?: PublishedLag,
): TextPublisher {
  return new PacedText(textOutbox(db, logger), logger, at, now, lag);
}

class PacedText implements TextPublisher {
  private all = '';
  private sent = 0;
  private lastSentAt = -Infinity;
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  // A piece at offset 0 starts the draft anew: a later attempt replaces what an earlier one wrote,
  // and so does a publisher that fell behind.
  private reset = false;
  private wroteAny = false;
  private failed = false;
  /** characters (code points) written so far: where the next piece starts */
  private written = 0;
  /** when each chunk not yet in a write arrived (kept only when the lag is measured) */
  private arrivals: number[] = [];

  constructor(
    private readonly outbox: TextOutbox,
    private readonly logger: Logger,
    private readonly at: TextAt,
    private readonly now: () => number,
    private readonly lag?: PublishedLag,
  ) {}

  push(text: string): void {
    if (!text) return;
    if (this.lag && !this.failed) this.arrivals.push(this.now());
    this.all += text;
    if (this.all.length - this.sent > BACKLOG_CHARS && this.writing) {
      // The writes fell behind: what waits is dropped, the next write replaces the draft with all of it.
      this.reset = true;
      this.sent = 0;
    }
    this.schedule();
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.writing) await this.writing;
    if (!this.failed && this.sent < this.all.length) {
      this.flush();
      while (this.writing) await this.writing;
    }
  }

  wrote(): boolean {
    return this.wroteAny;
  }

  private schedule(): void {
    if (this.timer || this.writing || this.sent === this.all.length) return;
    const wait = this.lastSentAt + PACE_MS - this.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    this.timer = undefined;
    if (this.writing || this.failed || this.sent === this.all.length) return;
    const replace = this.reset;
    const text = replace ? this.all : this.all.slice(this.sent);
    this.reset = false;
    this.sent = this.all.length;
    this.lastSentAt = this.now();
    this.wroteAny = true;
    const arrivals = this.arrivals;
    this.arrivals = [];
    this.writing = this.write(text, replace).then(() => this.published(arrivals), (err: Error) => {
      // A screen misses words; the turn itself goes on (its text is in the reply).
      this.failed = true;
      const { runId, turn } = this.at;
      this.logger.warn({ runId, turn, err: err.message }, 'streaming the model\'s words failed; the turn goes on');
    }).finally(() => {
      this.writing = undefined;
      this.schedule();
    });
  }

  private published(arrivals: number[]): void {
    if (!this.lag) return;
    const now = this.now();
    for (const arrived of arrivals) this.lag((now - arrived) / 1000);
  }

  private write(text: string, replace: boolean): Promise<void> {
    if (replace) this.written = 0;
    const pieces = splitPieces(text).map((piece, i) => {
      const offset = this.written;
      this.written += [...piece].length;
      return { ...this.at, offset, text: piece, ...(replace && i === 0 ? { rewrite: true } : {}) };
    });
    return this.outbox.send(pieces);
  }
}

/**
 * A turn's words and its tool calls' arguments as the model writes them: each on its way to event
 * streams through PostgreSQL, never through history.
 */
export class TurnText {
  private readonly words: TextPublisher;
  private readonly inputs = new Map<string, TextPublisher>();
  /** when the model's first chunk (words or a tool call's arguments) arrived (performance.now()) */
  firstChunkAt: number | undefined;

  /** `lag`: told how long each chunk of the words took to go out as text_delta */
  constructor(private readonly db: Queryable, private readonly logger: Logger, private readonly at: TextAt, lag?: PublishedLag) {
    this.words = textPublisher(db, logger, at, Date.now, lag);
  }

  readonly onText = (text: string): void => {
    this.firstChunkAt ??= performance.now();
    this.words.push(text);
  };

  readonly onToolInput = (toolCallId: string, text: string): void => {
    this.firstChunkAt ??= performance.now();
    let publisher = this.inputs.get(toolCallId);
    if (!publisher) this.inputs.set(toolCallId, (publisher = textPublisher(this.db, this.logger, { ...this.at, toolCallId })));
    publisher.push(text);
  };

  /** Resolves once everything written so far is out, before the turn's end is written. */
  published(): Promise<unknown> {
    return Promise.all([this.words, ...this.inputs.values()].map((p) => p.close()));
  }

  /** whether the turn's words were written: its draft then exists */
  wroteDraft(): boolean {
    return this.words.wrote();
  }
}
