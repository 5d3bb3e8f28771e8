/**
 * The raw bytes of one JSON string's content (between its quotes), fed in pieces cut anywhere, out
 * as the UTF-8 bytes of the string JSON.parse would make of them: escapes decoded, surrogate pairs
 * joined (also when their two escapes arrive in different pieces), a lone surrogate and invalid
 * UTF-8 as U+FFFD, exactly as `Buffer.from(JSON.parse(bytes.toString('utf8')))` would have them.
 * A raw control character or a bad escape is an error, as it is to JSON.parse.
 */

const BACKSLASH = 0x5c;
const QUOTE = 0x22;

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

/**
 * The decoded text gathers to this many chars before it goes out: each block is a write to the
 * spool file, and a wake-up of whoever reads it as it is written.
 */
const BLOCK_CHARS = 1 << 20;
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * Where an escape the text ends inside begins (its backslash), or -1 when its last escape is whole.
 * Only the last backslash can begin one: the hex digits of a \u escape hold none.
 */
function cutEscape(text: string): number {
  const last = text.lastIndexOf('\\');
  if (last === -1 || last < text.length - 6) return -1;
  let run = 1;
  while (last - run >= 0 && text.charCodeAt(last - run) === BACKSLASH) run++;
  if (run % 2 === 0) return -1; // `\\`: a whole escape of a backslash
  const needed = text.charCodeAt(last + 1) === 0x75 ? 6 : 2;
  return text.length - last < needed ? last : -1;
}

/** Where a UTF-8 character the bytes end inside begins; their length when they end on a whole one. */
function utf8Cut(bytes: Buffer): number {
  for (let k = bytes.length - 1; k >= 0 && k >= bytes.length - 3; k--) {
    const b = bytes[k];
    if ((b & 0xc0) === 0x80) continue;
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return bytes.length - k < length ? k : bytes.length;
  }
  return bytes.length;
}

/**
 * Each piece's bytes are decoded as UTF-8 and then as the content of a JSON string by JSON.parse
 * itself (native, and exactly its rules). What a piece's end cuts (a character's bytes, an escape,
 * a surrogate pair's high half) is carried to the next piece. A piece JSON.parse reads whole holds
 * no closing quote; only one it refuses is searched for the quote.
 */
export class JsonStringDecoder {
  /** the bytes of a character cut by the last piece's end */
  private carried: Buffer = Buffer.alloc(0);
  /** an escape cut by the last piece's end, from its backslash on */
  private cut = '';
  /** decoded text not yet sent out */
  private text = '';

  /** `flush` gets each decoded block. */
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
    const bytes = this.carried.length ? Buffer.concat([this.carried, piece.subarray(from)]) : piece.subarray(from);
    const whole = utf8Cut(bytes);
    let raw = this.cut + bytes.toString('utf8', 0, whole);
    const cutAt = cutEscape(raw);
    const value = tryParse(cutAt === -1 ? raw : raw.slice(0, cutAt));
    if (value !== undefined) {
      this.carried = whole < bytes.length ? Buffer.from(bytes.subarray(whole)) : Buffer.alloc(0);
      this.cut = cutAt === -1 ? '' : raw.slice(cutAt);
      this.add(value);
      return -1;
    }
    // The closing quote, or a bad escape or character: read exactly to the quote.
    const searchFrom = this.cut === '\\' ? from + 1 : from;
    const found = searchFrom >= piece.length ? -1 : closingQuote(piece, searchFrom);
    if (found < 0) throw badString();
    raw = this.cut + Buffer.concat([this.carried, piece.subarray(from, found)]).toString('utf8');
    this.carried = Buffer.alloc(0);
    this.cut = '';
    const last = tryParse(raw);
    if (last === undefined) throw badString();
    this.add(last);
    return found;
  }

  /** The string has closed: what is left goes out. */
  end(): void {
    if (this.cut !== '') throw new JsonStringError('a string ends inside an escape');
    // The bytes of a character the string ends inside: U+FFFD, as decoding the whole message makes them.
    if (this.carried.length > 0) this.text += this.carried.toString('utf8');
    this.carried = Buffer.alloc(0);
    this.emit(true);
  }

  private add(value: string): void {
    this.text += value;
    if (this.text.length >= BLOCK_CHARS) this.emit(false);
  }

  /** Sends the text out as UTF-8; a high surrogate at its end waits for its low half, unless the string has ended. */
  private emit(final: boolean): void {
    const text = this.text;
    const keep = !final && isHighSurrogate(text.charCodeAt(text.length - 1)) ? 1 : 0;
    this.text = text.slice(text.length - keep);
    // A lone surrogate becomes U+FFFD, as Buffer.from writes it.
    if (text.length > keep) this.flush(Buffer.from(keep ? text.slice(0, -1) : text, 'utf8'));
  }
}

const badString = () => new JsonStringError('a string holds a bad escape or a raw control character');

/** A JSON string's content as JSON.parse decodes it; undefined when it refuses it (or it holds a closing quote). */
function tryParse(raw: string): string | undefined {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}
