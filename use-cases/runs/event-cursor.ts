/**
 * How far a follower of a run's events has read: every event up to `upTo`, and the ones after it
 * in `beyond`. The tool calls of one turn run in parallel and write their events as they happen,
 * so a fast call's events may come before a slower sibling's lower numbers: they are delivered at
 * once, and the cursor (each event's SSE id) says exactly which were, so that a follower resuming
 * from it misses and repeats nothing. Written `12` (all up to 12) or `12,14-15,18` (and those).
 */
export class EventCursor {
  private constructor(private upToSeq: number, private readonly beyond: Set<number>) {}

  static after(seq: number): EventCursor {
    return new EventCursor(seq, new Set());
  }

  /** The cursor a client sent back (Last-Event-ID or `after`); undefined when it is not one. */
  static parse(text: string): EventCursor | undefined {
    if (text.length > MAX_TEXT || !CURSOR.test(text)) return undefined;
    const [first, ...ranges] = text.split(',');
    const cursor = new EventCursor(Number(first), new Set());
    let previous = cursor.upToSeq + 1;
    for (const range of ranges) {
      const [from, to = from] = range.split('-').map(Number);
      // Ascending and apart, each past the one before: the form this class writes, and no other.
      if (from <= previous || to < from || to - from > MAX_SEQ) return undefined;
      for (let seq = from; seq <= to; seq++) cursor.beyond.add(seq);
      previous = to + 1;
    }
    return ranges.length > MAX_RANGES ? undefined : cursor;
  }

  get upTo(): number {
    return this.upToSeq;
  }

  has(seq: number): boolean {
    return seq <= this.upToSeq || this.beyond.has(seq);
  }

  /** Whether `seq` can be delivered out of order without the cursor growing past its bound. */
  canHold(seq: number): boolean {
    return seq === this.upToSeq + 1 || this.ranges().length < MAX_RANGES || this.beyond.has(seq - 1) || this.beyond.has(seq + 1);
  }

  add(seq: number): void {
    if (this.has(seq)) return;
    this.beyond.add(seq);
    while (this.beyond.delete(this.upToSeq + 1)) this.upToSeq++;
  }

  /** Every event below `seq` that will ever exist has been delivered: the gaps below it never fill. */
  settle(seq: number): void {
    if (seq <= this.upToSeq) return;
    this.upToSeq = seq;
    for (const s of this.beyond) if (s <= seq) this.beyond.delete(s);
    while (this.beyond.delete(this.upToSeq + 1)) this.upToSeq++;
  }

  toString(): string {
    return [String(this.upToSeq), ...this.ranges().map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`))].join(',');
  }

  private ranges(): [number, number][] {
    const out: [number, number][] = [];
    for (const seq of [...this.beyond].sort((a, b) => a - b)) {
      const last = out[out.length - 1];
      if (last && last[1] === seq - 1) last[1] = seq;
      else out.push([seq, seq]);
    }
    return out;
  }
}

/** At most this many runs of events delivered ahead of a gap: a cursor (an SSE id) stays short. */
const MAX_RANGES = 32;
const MAX_TEXT = 512;
const MAX_SEQ = 1_000_000_000;
const CURSOR = /^\d{1,9}(,\d{1,9}(-\d{1,9})?)*$/;
