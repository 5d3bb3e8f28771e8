import { MessageBytes } from './message-bytes';
import { SpoolingMessage } from './spooling-message';

/**
 * An event stream from an MCP server passed on one whole event at a time, each up to the bound,
 * with a resource's large contents taken out of its data on the way (spooling-message.ts). An
 * event's lines other than data pass as they came; its data lines are read as one message and go
 * on as one `data:` line. Several data lines are joined with a space (JSON whitespace), not with the
 * line feed the event-stream format joins them with, so that the message stays on one line.
 */

export interface EventLimits {
  /** bound on what one event holds in memory */
  bound: number;
  /** bound on the decoded contents one event's message spools */
  maxContentBytes: number;
}

/**
 * Ends the stream in place of an event past its bounds, or whose contents could not be spooled
 * (`failure` says why; see mcp-client/transports/http-answers.ts).
 */
export type RefuseEvent = (
  controller: ReadableStreamDefaultController<Uint8Array>,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  failure?: string,
) => Promise<void>;

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const DATA = Buffer.from('data:');
const NEWLINE = Buffer.from('\n');

type LineKind = 'start' | 'data' | 'other';

/** Where the line that goes on at `from` ends: its first CR or LF, -1 when the chunk ends first. */
function lineEnd(chunk: Buffer, from: number): number {
  const lf = chunk.indexOf(LF, from);
  const cr = chunk.indexOf(CR, from);
  return lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
}

/** The bytes of an event stream, in chunks cut anywhere, read into whole events. */
class EventReader {
  private readonly data: SpoolingMessage;
  private readonly other = new MessageBytes();
  private kind: LineKind = 'start';
  /** the start of a line, until it tells whether it is a data line */
  private prefix: number[] = [];
  private dataLines = 0;
  private skipSpace = false;
  private afterCr = false;
  private ready: Buffer[] = [];
  /** an event went past its bounds, or its contents could not be spooled: nothing more goes on */
  private refused = false;
  private failure: string | undefined;

  constructor(maxContentBytes: number) {
    this.data = new SpoolingMessage(maxContentBytes);
  }

  /** Whether what is held (or was refused) is past the bounds: the stream ends there. */
  pastBounds(bound: number): boolean {
    const held = this.data.size + this.other.size + this.prefix.length;
    return this.refused || this.data.overBound || Boolean(this.data.failure) || held > bound;
  }

  read(chunk: Buffer): void {
    for (let i = 0; i < chunk.length;) {
      if (this.afterCr) {
        this.afterCr = false;
        if (chunk[i] === LF) {
          i++;
          continue;
        }
      }
      i = this.kind === 'start' ? this.readLineStart(chunk, i) : this.readLineRest(chunk, i);
    }
  }

  /** The stream ended: its last line and event end with it. */
  finish(): void {
    if (this.kind !== 'start' || this.prefix.length > 0) this.endLine();
    this.endEvent();
  }

  /** The events read whole since the last call. */
  takeReady(): Buffer[] {
    const ready = this.ready;
    this.ready = [];
    return ready;
  }

  /** Drops the event being read and its spool files; returns why its contents could not be spooled, if so. */
  drop(): string | undefined {
    this.failure ??= this.data.failure;
    this.data.clear();
    return this.failure;
  }

  /** One byte of a line's start, which tells (once it has `data:` or differs from it) what the line is. */
  private readLineStart(chunk: Buffer, i: number): number {
    const c = chunk[i];
    if (c === LF || c === CR) {
      this.afterCr = c === CR;
      this.endLine();
      return i + 1;
    }
    this.prefix.push(c);
    if (this.prefix.length === DATA.length && Buffer.from(this.prefix).equals(DATA)) {
      this.prefix = [];
      this.startData();
    } else if (c !== DATA[this.prefix.length - 1]) {
      this.kind = 'other';
      this.other.push(Buffer.from(this.prefix));
      this.prefix = [];
    }
    return i + 1;
  }

  /** A line's bytes after its start, up to its end or the chunk's. */
  private readLineRest(chunk: Buffer, i: number): number {
    if (this.kind === 'data' && this.skipSpace) {
      this.skipSpace = false;
      if (chunk[i] === SPACE) return i + 1;
    }
    const end = lineEnd(chunk, i);
    const part = chunk.subarray(i, end === -1 ? chunk.length : end);
    if (this.kind === 'data') this.data.push(part);
    else this.other.push(part);
    if (end === -1) return chunk.length;
    this.afterCr = chunk[end] === CR;
    this.endLine();
    return end + 1;
  }

  private startData(): void {
    this.kind = 'data';
    this.skipSpace = true;
    // Lines after the first join the message with a space.
    if (this.dataLines > 0) this.data.push(Buffer.from(' '));
  }

  private endLine(): void {
    if (this.kind === 'start') {
      if (this.prefix.length === 0) this.endEvent();
      else if (Buffer.from(this.prefix).equals(DATA.subarray(0, 4))) this.dataLines++;
      else this.other.push(Buffer.from([...this.prefix, LF]));
    } else if (this.kind === 'data') {
      this.dataLines++;
    } else {
      this.other.push(Buffer.from([LF]));
    }
    this.prefix = [];
    this.kind = 'start';
  }

  private endEvent(): void {
    if (this.dataLines === 0 && this.other.size === 0) return;
    if (this.data.overBound || this.data.failure) {
      this.refused = true;
      this.drop();
    }
    if (this.refused) return;
    const kept = this.dataLines > 0 ? this.data.take() : undefined;
    const dataLine = kept ? [DATA, Buffer.from(' '), kept, NEWLINE] : [];
    this.ready.push(Buffer.concat([this.other.join(), ...dataLine, NEWLINE]));
    this.other.clear();
    this.dataLines = 0;
  }
}

/** The body as whole events, each within `limits`; `refuse` ends the stream at the first that is not. */
export function eventStream(body: ReadableStream<Uint8Array>, limits: EventLimits, refuse: RefuseEvent): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const events = new EventReader(limits.maxContentBytes);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const next = await reader.read();
        if (next.done) {
          events.finish();
          for (const event of events.takeReady()) controller.enqueue(event);
          controller.close();
          return;
        }
        events.read(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
        const ready = events.takeReady();
        for (const event of ready) controller.enqueue(event);
        if (events.pastBounds(limits.bound)) return refuse(controller, reader, events.drop());
        // Something went on: the reader asks again when it wants more.
        if (ready.length > 0) return;
      }
    },
    cancel: (reason) => {
      events.drop();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
