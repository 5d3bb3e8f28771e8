import { ContentString, type ContentField, type ContentSink } from './content-string';
import { closingQuote, CUT_ESCAPE, JsonStringError } from './json-string-decoder';

/**
 * Watches one JSON-RPC message as its bytes arrive and takes the content of a large resource out
 * of it: a string at `result.contents[i].text` or `.blob` that grows past the threshold goes,
 * decoded, to a sink (a spool file) and the message keeps a placeholder the sink names in its
 * place. Every other byte is kept as it came, so the message parses as before; its syntax is left to
 * JSON.parse, and the taken strings are checked here as strictly as JSON.parse would check them.
 */

const enum State { Value, ObjectStart, Key, Colon, AfterValue, Literal, String, Invalid }

interface Frame {
  array: boolean;
  /** the member being read, when it is a short plain key */
  key: string | undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MAX_KEY_BYTES = 16;
const MAX_ID_BYTES = 256;
/** Nothing the scan looks for is deeper than this: past it the message is left to JSON.parse, with no frame per level. */
const MAX_DEPTH = 64;
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

export class ContentScanner {
  private state = State.Value;
  private readonly stack: Frame[] = [];
  private afterBackslash = false;
  /** the string being read: a key, the content to watch, or any other */
  private stringKind: 'key' | 'content' | 'other' = 'other';
  private keyBytes: number[] | undefined = [];
  /** the content string being read */
  private contentString: ContentString | undefined;
  private capturingId = false;
  private idBytes: number[] = [];
  private idText: string | undefined;
  /** why the message is not JSON as far as the scan could tell */
  error: string | undefined;

  constructor(private readonly threshold: number, private readonly keep: (bytes: Buffer) => void, private readonly sink: ContentSink) {}

  /** the raw bytes held in memory outside what was kept (a content string under the threshold) */
  get heldBytes(): number {
    return this.contentString?.heldBytes ?? 0;
  }

  /** The message's JSON-RPC id, once read (a response's id may come after its result). */
  get id(): string | number | undefined {
    let id: unknown;
    try {
      id = this.idText === undefined ? undefined : JSON.parse(this.idText);
    } catch { /* not an id JSON-RPC allows */ }
    return typeof id === 'string' || typeof id === 'number' ? id : undefined;
  }

  push(chunk: Buffer): void {
    let keptFrom = this.stringKind === 'content' && this.state === State.String ? -1 : 0;
    const n = chunk.length;
    for (let i = 0; i < n;) {
      const state = this.state;
      if (state === State.Invalid) break;
      if (state === State.String) {
        let end: number;
        if (this.contentString?.spooled) {
          end = this.decode(chunk, i);
        } else {
          end = this.stringEnd(chunk, i);
          const contentEnd = end === -1 ? n : end;
          if (this.stringKind === 'content') this.content(chunk.subarray(i, contentEnd));
          else this.record(chunk, i, contentEnd);
        }
        if (end === -1 || (this.state as State) === State.Invalid) break;
        if (this.stringKind === 'content') keptFrom = this.closeContent(end);
        if (this.state === State.Invalid) break;
        this.closeString();
        i = end + 1;
        continue;
      }
      const c = chunk[i];
      if (state === State.Literal) {
        if (isSpace(c) || c === 0x2c || c === 0x7d || c === 0x5d) {
          this.endValue();
          continue;
        }
        if (this.capturingId) this.captureId(c);
        i++;
        continue;
      }
      i++;
      if (isSpace(c)) continue;
      if (state === State.Value) {
        if (!this.startValue(c)) this.fail();
        else if (this.state === State.String && this.stringKind === 'content') {
          this.keep(chunk.subarray(keptFrom, i));
          keptFrom = -1;
        }
      } else if (state === State.ObjectStart || state === State.Key) {
        if (c === QUOTE) this.startString('key');
        else if (c === 0x7d && state === State.ObjectStart) this.closeContainer(false);
        else this.fail();
      } else if (state === State.Colon) {
        if (c === 0x3a) this.state = State.Value;
        else this.fail();
      } else if (state === State.AfterValue) {
        const top = this.stack[this.stack.length - 1];
        if (!top) this.fail();
        else if (c === 0x2c) this.state = top.array ? State.Value : State.Key;
        else if (c === (top.array ? 0x5d : 0x7d)) this.closeContainer(top.array);
        else this.fail();
      }
    }
    if (keptFrom !== -1 && keptFrom < n) this.keep(chunk.subarray(keptFrom));
  }

  /** Drops whatever the sink holds of an unfinished content string. */
  abandon(): void {
    this.contentString?.abandon();
    this.contentString = undefined;
  }

  /**
   * The scan stops and keeps the rest as it comes. Inside a content string, the kept message gets a
   * raw NUL where the string failed, so that JSON.parse refuses it as it would the original.
   */
  private fail(message = 'not JSON'): void {
    if (this.state === State.String && this.stringKind === 'content') this.keep(Buffer.from([0]));
    this.abandon();
    this.error ??= message;
    this.state = State.Invalid;
  }

  private startValue(c: number): boolean {
    const capture = this.stack.length === 1 && !this.stack[0].array && this.stack[0].key === 'id';
    if (c === 0x7b || c === 0x5b) {
      if (this.stack.length === MAX_DEPTH) {
        this.fail('nested too deeply to follow');
        return true;
      }
      this.stack.push({ array: c === 0x5b, key: undefined });
      this.state = c === 0x7b ? State.ObjectStart : State.Value;
      return true;
    }
    if (c === 0x5d && this.stack[this.stack.length - 1]?.array) {
      // `[]`: an array that closes where a value could start
      this.closeContainer(true);
      return true;
    }
    this.capturingId = capture;
    if (capture) {
      this.idBytes = [];
      this.captureId(c);
    }
    if (c === QUOTE) {
      this.startString(this.atContentPath() ? 'content' : 'other');
      return true;
    }
    this.state = State.Literal;
    return c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e;
  }

  /** `result.contents[i].text` or `.blob` of the message. */
  private atContentPath(): boolean {
    const s = this.stack;
    return s.length === 4 && !s[0].array && s[0].key === 'result' && !s[1].array && s[1].key === 'contents' && s[2].array
      && !s[3].array && (s[3].key === 'text' || s[3].key === 'blob');
  }

  private startString(kind: 'key' | 'content' | 'other'): void {
    this.state = State.String;
    this.stringKind = kind;
    this.afterBackslash = false;
    if (kind === 'key') this.keyBytes = [];
    if (kind === 'content') this.contentString = new ContentString(this.threshold, this.sink, this.stack[3].key as ContentField);
  }

  /** Where the string's closing quote is in the chunk, from `i` on; -1 when it is not in it. */
  private stringEnd(chunk: Buffer, i: number): number {
    if (this.afterBackslash) {
      if (i >= chunk.length) return -1;
      i++;
    }
    const end = closingQuote(chunk, i);
    this.afterBackslash = end === CUT_ESCAPE;
    return end === CUT_ESCAPE ? -1 : end;
  }

  /** Keys and the id are remembered, short; other strings only pass. */
  private record(chunk: Buffer, from: number, to: number): void {
    if (this.stringKind === 'key' && this.keyBytes) {
      if (to - from + this.keyBytes.length > MAX_KEY_BYTES || chunk.subarray(from, to).includes(BACKSLASH)) this.keyBytes = undefined;
      else for (let k = from; k < to; k++) this.keyBytes.push(chunk[k]);
    }
    if (this.capturingId) for (let k = from; k < to; k++) this.captureId(chunk[k]);
  }

  private captureId(c: number): void {
    if (this.idBytes.length < MAX_ID_BYTES) this.idBytes.push(c);
  }

  private closeString(): void {
    if (this.stringKind === 'key') {
      const top = this.stack[this.stack.length - 1];
      top.key = this.keyBytes ? Buffer.from(this.keyBytes).toString('utf8') : undefined;
      this.state = State.Colon;
      return;
    }
    if (this.capturingId) this.captureId(QUOTE);
    this.endValue();
  }

  private endValue(): void {
    if (this.capturingId) {
      this.idText = Buffer.from(this.idBytes).toString('utf8');
      this.capturingId = false;
    }
    this.state = State.AfterValue;
  }

  private closeContainer(array: boolean): void {
    const top = this.stack.pop();
    if (!top || top.array !== array) this.fail();
    else this.state = State.AfterValue;
  }

  private content(piece: Buffer): void {
    if (piece.length === 0 || this.state === State.Invalid) return;
    try {
      this.contentString!.push(piece);
    } catch (err) {
      if (!(err instanceof JsonStringError)) throw err;
      this.fail(err.message);
    }
  }

  /** A spooled content string, decoded up to its closing quote (see JsonStringDecoder.decodeUntilQuote). */
  private decode(chunk: Buffer, from: number): number {
    try {
      return this.contentString!.decodeUntilQuote(chunk, from);
    } catch (err) {
      if (!(err instanceof JsonStringError)) throw err;
      this.fail(err.message);
      return -1;
    }
  }

  /** The content string closed at `quote`: its bytes, or the sink's placeholder, are kept; returns where keeping resumes. */
  private closeContent(quote: number): number {
    if (this.state === State.Invalid) return -1;
    try {
      for (const part of this.contentString!.end()) this.keep(part);
    } catch (err) {
      if (!(err instanceof JsonStringError)) throw err;
      this.fail(err.message);
      return -1;
    }
    this.contentString = undefined;
    return quote;
  }
}
