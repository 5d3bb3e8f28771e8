import { isUtf8 } from 'node:buffer';

/**
 * The raw bytes of one JSON string's content (between its quotes), fed in pieces cut anywhere, out
 * as the UTF-8 bytes of the string JSON.parse would make of them: escapes decoded, surrogate pairs
 * joined (also when their two escapes arrive in different pieces), a lone surrogate and invalid
 * UTF-8 as U+FFFD, exactly as `Buffer.from(JSON.parse(bytes.toString('utf8')))` would have them.
 * A raw control character or a bad escape is an error, as it is to JSON.parse.
 */

const BLOCK_BYTES = 1 << 20;
const REPLACEMENT = Buffer.from([0xef, 0xbf, 0xbd]);
const BACKSLASH = 0x5c;
const SIMPLE_ESCAPES: Record<number, number> = {
  0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09,
};

export class JsonStringError extends Error {}

/** closingQuote's answer when the chunk ends right after a backslash: its next byte is escaped. */
export const CUT_ESCAPE = -2;

/** Where a string's closing quote is in the chunk, reading its content from `from`; -1 when not in it. */
export function closingQuote(chunk: Buffer, from: number): number {
  let quote = chunk.indexOf(QUOTE, from);
  let backslash = chunk.indexOf(BACKSLASH, from);
  for (;;) {
    if (backslash === -1 || (quote !== -1 && quote < backslash)) return quote;
    if (backslash + 1 >= chunk.length) return CUT_ESCAPE;
    const after = backslash + 2;
    if (quote !== -1 && quote < after) quote = chunk.indexOf(QUOTE, after);
    backslash = chunk.indexOf(BACKSLASH, after);
  }
}

const QUOTE = 0x22;
const SHORT_RUN = 64;
const hexValue = (c: number) => (c >= 48 && c <= 57 ? c - 48 : (c | 32) >= 97 && (c | 32) <= 102 ? (c | 32) - 87 : -1);

/** The code unit of the four hex digits at bytes[at…at+4) of a \u escape. */
function hexUnit(bytes: Buffer, at: number): number {
  let unit = 0;
  for (let k = at; k < at + 4; k++) {
    const v = hexValue(bytes[k]);
    if (v < 0) throw new JsonStringError('a string holds an invalid \\u escape');
    unit = unit * 16 + v;
  }
  return unit;
}

export class JsonStringDecoder {
  private readonly out = Buffer.allocUnsafeSlow(BLOCK_BYTES);
  private used = 0;
  /** the bytes of an escape not yet complete (its backslash included); empty when none */
  private readonly escape: number[] = [];
  /** a high surrogate from an escape, waiting for its low half */
  private high = -1;

  /** `flush` gets each decoded block; the block is reused after it returns. */
  constructor(private readonly flush: (bytes: Buffer) => void) {}

  /** A piece of the string's content, which does not hold its closing quote. */
  push(piece: Buffer): void {
    this.decodeUntilQuote(piece, 0);
  }

  /**
   * Decodes the piece from `from` up to the string's closing quote (a quote no backslash escapes)
   * and returns where that quote is, or -1 when the piece ends first.
   */
  decodeUntilQuote(piece: Buffer, from: number): number {
    const n = piece.length;
    let i = from;
    while (this.escape.length > 0) {
      if (i >= n) return -1;
      i = this.continueEscape(piece, i);
    }
    let quote = piece.indexOf(QUOTE, i);
    let backslash = piece.indexOf(BACKSLASH, i);
    for (;;) {
      if (backslash === -1 || (quote !== -1 && quote < backslash)) {
        const end = quote === -1 ? n : quote;
        if (end > i) this.plain(piece, i, end);
        return quote;
      }
      if (backslash > i) this.plain(piece, i, backslash);
      const kind = backslash + 1 < n ? piece[backslash + 1] : -1;
      if (kind !== -1 && kind !== 0x75) {
        const simple = SIMPLE_ESCAPES[kind];
        if (simple === undefined) throw new JsonStringError('a string holds an invalid escape');
        this.loneHigh();
        this.byte(simple);
        i = backslash + 2;
      } else if (kind === 0x75 && backslash + 6 <= n) {
        this.codeUnit(hexUnit(piece, backslash + 2));
        i = backslash + 6;
      } else {
        // An escape cut by the piece's end: finished from the next piece.
        for (let k = backslash; k < n; k++) this.escape.push(piece[k]);
        return -1;
      }
      if (quote !== -1 && quote < i) quote = piece.indexOf(QUOTE, i);
      backslash = piece.indexOf(BACKSLASH, i);
    }
  }

  /** The string has closed: what is left goes out. */
  end(): void {
    if (this.escape.length > 0) throw new JsonStringError('a string ends inside an escape');
    this.loneHigh();
    this.emit(this.used);
  }

  private plain(piece: Buffer, from: number, to: number): void {
    this.loneHigh();
    if (to - from <= SHORT_RUN && this.used + (to - from) <= BLOCK_BYTES) {
      // Most runs of a CSV are short (between the escaped quotes of its fields): a loop beats a native call.
      const out = this.out;
      let used = this.used;
      for (let k = from; k < to; k++) {
        const b = piece[k];
        if (b < 0x20) throw new JsonStringError('a string holds a raw control character');
        out[used++] = b;
      }
      this.used = used;
      return;
    }
    for (let k = from; k < to; k++) {
      if (piece[k] < 0x20) throw new JsonStringError('a string holds a raw control character');
    }
    for (let k = from; k < to;) {
      if (this.used === BLOCK_BYTES) this.emitWhole();
      const copied = piece.copy(this.out, this.used, k, Math.min(to, k + BLOCK_BYTES - this.used));
      this.used += copied;
      k += copied;
    }
  }

  /** One more byte of an escape cut by a piece's end; the escape is decoded once whole. */
  private continueEscape(piece: Buffer, i: number): number {
    const escape = this.escape;
    escape.push(piece[i]);
    if (escape.length === 2 && escape[1] !== 0x75) {
      const simple = SIMPLE_ESCAPES[escape[1]];
      if (simple === undefined) throw new JsonStringError('a string holds an invalid escape');
      escape.length = 0;
      this.loneHigh();
      this.byte(simple);
    } else if (escape.length === 6) {
      const unit = hexUnit(Buffer.from(escape), 2);
      escape.length = 0;
      this.codeUnit(unit);
    }
    return i + 1;
  }

  private codeUnit(unit: number): void {
    if (unit >= 0xdc00 && unit <= 0xdfff && this.high >= 0) {
      const point = 0x10000 + ((this.high - 0xd800) << 10) + (unit - 0xdc00);
      this.high = -1;
      this.bytes(0xf0 | (point >> 18), 0x80 | ((point >> 12) & 0x3f), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f));
      return;
    }
    this.loneHigh();
    if (unit >= 0xd800 && unit <= 0xdbff) this.high = unit;
    else if (unit >= 0xdc00 && unit <= 0xdfff) this.bytes(...REPLACEMENT);
    else if (unit < 0x80) this.bytes(unit);
    else if (unit < 0x800) this.bytes(0xc0 | (unit >> 6), 0x80 | (unit & 0x3f));
    else this.bytes(0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f));
  }

  /** A high surrogate not followed by its low half is U+FFFD in UTF-8, as Buffer.from writes it. */
  private loneHigh(): void {
    if (this.high < 0) return;
    this.high = -1;
    this.bytes(...REPLACEMENT);
  }

  private byte(value: number): void {
    if (this.used === BLOCK_BYTES) this.emitWhole();
    this.out[this.used++] = value;
  }

  private bytes(...values: number[]): void {
    if (this.used + values.length > BLOCK_BYTES) this.emitWhole();
    for (const v of values) this.out[this.used++] = v;
  }

  /**
   * Sends the block up to a point before which UTF-8 decodes the same alone as followed by the
   * rest (before a byte that is not a continuation byte); the few bytes after it stay.
   */
  private emitWhole(): void {
    let cut = this.used;
    for (let k = this.used - 1; k >= 0 && k >= this.used - 4; k--) {
      if ((this.out[k] & 0xc0) !== 0x80) {
        cut = k;
        break;
      }
    }
    if (cut === 0) cut = this.used;
    this.emit(cut);
    this.out.copy(this.out, 0, cut, this.used);
    this.used -= cut;
  }

  private emit(length: number): void {
    if (length === 0) return;
    const block = this.out.subarray(0, length);
    // Raw bytes that are not UTF-8 became U+FFFD when the message was decoded as text: so here too.
    this.flush(isUtf8(block) ? block : Buffer.from(block.toString('utf8')));
  }
}
