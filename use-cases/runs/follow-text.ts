import type { Queryable } from '../../store/pool';
import type { RunChangeFeed } from '../../store/runs/change-feed';
import { readTurnDrafts, type TextPiece } from '../../store/runs/turn-drafts';

/**
 * A run's words as the model writes them, for one follower (an event stream): the drafts of the
 * turns under way first (one `text_delta` each with the text so far), then each piece as it is
 * heard, without repeats or holes. A piece that does not follow on (one was missed, the listener
 * reconnected) sends the follower back to the draft. A new attempt of a turn, or a draft written
 * anew, is `text_reset` followed by the text so far. A follower that resumes a stream it lost
 * (`resumed`) may show words of a turn already: its first drafts come as `text_reset` then the
 * text so far, which replaces them. Nothing here is stored for the follower.
 */

export type TextItem =
  | { event: 'text_delta'; data: { turn: number; attempt: number; text: string } }
  | { event: 'text_reset'; data: { turn: number; attempt: number } }
  | { event: 'tool_input_delta'; data: { turn: number; attempt: number; toolCallId: string; text: string } };

export interface TextFollowDeps {
  db: Queryable;
  changes: RunChangeFeed;
}

interface Seen { attempt: number; covered: number }

const chars = (text: string) => [...text];

export function followTurnText(
  deps: TextFollowDeps, runId: string, send: (item: TextItem) => Promise<unknown>,
  options: { resumed?: boolean } = {},
): { close(): void } {
  const follower = new TurnTextFollower(deps.db, runId, send, options.resumed === true);
  const stop = deps.changes.onText(runId, (p) => follower.enqueue(() => (p ? follower.piece(p) : follower.resync())));
  // Listening first, then the drafts: a piece heard meanwhile waits behind them, and repeats nothing.
  follower.enqueue(() => follower.resync());
  return {
    close() {
      follower.close();
      stop();
    },
  };
}

/** What one follower has been sent of each turn's text, and what it is sent next. */
class TurnTextFollower {
  private readonly seen = new Map<number, Seen>();
  private closed = false;
  // One item at a time, in the order decided: the draft before the pieces heard meanwhile.
  private queue: Promise<unknown> = Promise.resolve();

  /** `resumed`: the follower's turns are as good as seen, with nothing of them known to be shown. */
  constructor(
    private readonly db: Queryable, private readonly runId: string, private readonly send: (item: TextItem) => Promise<unknown>,
    private resumed: boolean,
  ) {}

  enqueue(work: () => Promise<unknown>): void {
    this.queue = this.queue.then(() => (this.closed ? undefined : work())).catch(() => undefined);
  }

  close(): void {
    this.closed = true;
  }

  /** The drafts of the turns under way, each as what this follower has not seen of it. */
  async resync(): Promise<void> {
    for (const draft of await readTurnDrafts(this.db, this.runId)) {
      if (this.resumed && !this.seen.has(draft.turn)) this.seen.set(draft.turn, { attempt: 0, covered: 0 });
      await this.snapshot(draft.turn, draft.attempt, draft.text);
    }
    this.resumed = false;
  }

  /** A piece as it was heard: what follows what this follower has seen, or the draft again when it does not follow on. */
  async piece(p: TextPiece): Promise<unknown> {
    // A tool call's arguments: as heard (not kept, so a stream that joins later does not get them).
    if (p.toolCallId) {
      return this.send({ event: 'tool_input_delta', data: { turn: p.turn, attempt: p.attempt, toolCallId: p.toolCallId, text: p.text } });
    }
    const was = this.seen.get(p.turn);
    const text = chars(p.text);
    if (p.rewrite && was && was.attempt === p.attempt) return this.rewritten(p, text.length);
    if (p.offset === 0 && (!was || p.reset)) {
      // A turn begun, an attempt begun again, or a draft written anew: all of its text.
      if (was && was.attempt === p.attempt && text.length <= was.covered) return undefined;
      return this.snapshot(p.turn, p.attempt, p.text);
    }
    if (!was || was.attempt !== p.attempt || p.offset > was.covered) return this.resync();
    if (p.offset + text.length <= was.covered) return undefined;
    // Only what follows what this follower has seen (the draft it read may have covered part of it).
    const fresh = text.slice(was.covered - p.offset).join('');
    was.covered = p.offset + text.length;
    return this.delta(p.turn, p.attempt, fresh);
  }

  /**
   * The draft written anew over words this follower may have shown (its writer fell behind and
   * dropped what waited): text_reset, then the whole text again, as the stream's contract says.
   */
  private async rewritten(p: TextPiece, length: number): Promise<unknown> {
    this.seen.set(p.turn, { attempt: p.attempt, covered: length });
    await this.send({ event: 'text_reset', data: { turn: p.turn, attempt: p.attempt } });
    return this.delta(p.turn, p.attempt, p.text);
  }

  /** The turn's text so far: what this follower has not seen of it. */
  private async snapshot(turn: number, attempt: number, text: string): Promise<unknown> {
    const was = this.seen.get(turn);
    const all = chars(text);
    this.seen.set(turn, { attempt, covered: all.length });
    if (was && was.attempt === attempt && all.length >= was.covered) return this.delta(turn, attempt, all.slice(was.covered).join(''));
    if (was) await this.send({ event: 'text_reset', data: { turn, attempt } });
    return this.delta(turn, attempt, text);
  }

  private delta(turn: number, attempt: number, text: string): Promise<unknown> | undefined {
    return text ? this.send({ event: 'text_delta', data: { turn, attempt, text } }) : undefined;
  }
}
