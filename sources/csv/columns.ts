import type { ColumnType } from '../../core/data-source';
import { truncateUtf8 } from '../../core/truncated-text';

/**
 * Column names and types of an imported CSV. Pure: no I/O, so the rules are unit-tested directly.
 */

/** PostgreSQL truncates identifiers to 63 bytes (NAMEDATALEN - 1), so uniqueness must hold after the cut. */
export const MAX_IDENTIFIER_BYTES = 63;
/** PostgreSQL's hard limit on the columns of a table. */
export const MAX_COLUMNS = 1600;



/**
 * Lower-case letters, digits and "_", so that the LLM can usually write names unquoted; reserved words
 * (`select`, `order`, `user`) still work because every statement we build quotes them.
 */
export function sanitiseName(raw: string, fallback: string): string {
  const name = raw.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}_]+/gu, '_').replace(/^_+|_+$/g, '');
  return name === '' ? fallback : name;
}

/** Names unique after the 63-byte cut: a later duplicate gets `_2`, `_3`, … within the limit. */
export function uniqueNames(names: string[], taken: Iterable<string> = []): string[] {
  const used = new Set(taken);
  return names.map((name) => {
    let candidate = truncateUtf8(name, MAX_IDENTIFIER_BYTES);
    for (let n = 2; used.has(candidate); n++) {
      const suffix = `_${n}`;
      candidate = truncateUtf8(name, MAX_IDENTIFIER_BYTES - suffix.length) + suffix;
    }
    used.add(candidate);
    return candidate;
  });
}

/** PostgreSQL refuses these as column names ("conflicts with a system column name"): they are taken. */
const SYSTEM_COLUMNS = ['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid'];

export function columnNames(header: string[]): string[] {
  return uniqueNames(header.map((h, i) => sanitiseName(h, `column_${i + 1}`)), SYSTEM_COLUMNS);
}

/** A double-quoted identifier; names are already cut to 63 bytes, so PostgreSQL keeps them as written. */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

// Bit flags of the types a value fits; a column's type is the narrowest one all its values fit.
const FITS = { integer: 1, bigint: 2, numeric: 4, boolean: 8, date: 16, timestamp: 32, timestamptz: 64 } as const;
const ALL = 127;
const INTEGER = FITS.integer | FITS.bigint | FITS.numeric;
const BIGINT = FITS.bigint | FITS.numeric;

const PLUS = 43;
const MINUS = 45;
const DOT = 46;
const COLON = 58;
const isDigit = (c: number) => c >= 48 && c <= 57;
const digit = (t: string, i: number) => t.charCodeAt(i) - 48;
/** Whether a digit()'s value is a digit's (a char that is no digit gives another, past the text's end NaN). */
const isDigitValue = (v: number) => v >= 0 && v <= 9;

function digitsAt(t: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isDigit(t.charCodeAt(i))) return false;
  return true;
}

/** Whether the digits t[i, i + limit.length) are at most `limit` (same length, so compared as text). */
function atMost(t: string, i: number, limit: string): boolean {
  for (let k = 0; k < limit.length; k++) {
    const d = t.charCodeAt(i + k) - limit.charCodeAt(k);
    if (d !== 0) return d < 0;
  }
  return true;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function validDate(year: number, month: number, day: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]);
}

/**
 * `[+-]?digits`, `[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?`: only forms PostgreSQL's numeric input
 * accepts with the same meaning, exponents bounded. Integers get the narrowest of int4 and int8 they fit.
 */
function fitsNumber(t: string, s: number, e: number): number {
  const negative = t.charCodeAt(s) === MINUS;
  let i = t.charCodeAt(s) === PLUS || negative ? s + 1 : s;
  const intStart = i;
  while (i < e && isDigit(t.charCodeAt(i))) i++;
  const intDigits = i - intStart;
  if (i === e) {
    if (intDigits === 0) return 0;
    if (intDigits < 10) return INTEGER;
    if (intDigits === 10) return atMost(t, intStart, negative ? '2147483648' : '2147483647') ? INTEGER : BIGINT;
    if (intDigits < 19) return BIGINT;
    if (intDigits === 19) return atMost(t, intStart, negative ? '9223372036854775808' : '9223372036854775807') ? BIGINT : FITS.numeric;
    return FITS.numeric;
  }
  let fracDigits = 0;
  if (t.charCodeAt(i) === DOT) { // i < e here
    const fracStart = ++i;
    while (i < e && isDigit(t.charCodeAt(i))) i++;
    fracDigits = i - fracStart;
  }
  if (intDigits === 0 && fracDigits === 0) return 0;
  if (i === e) return FITS.numeric;
  if ((t.charCodeAt(i) | 32) !== 101) return 0; // e or E
  i++;
  if (i < e && (t.charCodeAt(i) === PLUS || t.charCodeAt(i) === MINUS)) i++;
  const expDigits = e - i;
  return expDigits >= 1 && expDigits <= 3 && digitsAt(t, i, e) ? FITS.numeric : 0;
}

/** `YYYY-MM-DD`, or `YYYY-MM-DD[T ]hh:mm[:ss[.ffffff]][Z|±hh[[:]mm]]` with a real date and time. */
function fitsDateTime(t: string, s: number, e: number): number {
  const len = e - s;
  if (len < 10 || t.charCodeAt(s + 4) !== MINUS || t.charCodeAt(s + 7) !== MINUS) return 0;
  // Each digit read once, as a value (a char that is no digit gives one outside 0-9): this runs for every cell of a date column.
  const y0 = digit(t, s), y1 = digit(t, s + 1), y2 = digit(t, s + 2), y3 = digit(t, s + 3);
  const m0 = digit(t, s + 5), m1 = digit(t, s + 6), d0 = digit(t, s + 8), d1 = digit(t, s + 9);
  if (!(isDigitValue(y0) && isDigitValue(y1) && isDigitValue(y2) && isDigitValue(y3)
    && isDigitValue(m0) && isDigitValue(m1) && isDigitValue(d0) && isDigitValue(d1))) return 0;
  const dateOk = validDate(y0 * 1000 + y1 * 100 + y2 * 10 + y3, m0 * 10 + m1, d0 * 10 + d1);
  if (len === 10) return dateOk ? FITS.date : 0;
  const sep = t.charCodeAt(s + 10);
  if (!dateOk || (sep !== 84 && sep !== 32) || len < 16 || t.charCodeAt(s + 13) !== COLON) return 0; // T or space
  const h0 = digit(t, s + 11), h1 = digit(t, s + 12), n0 = digit(t, s + 14), n1 = digit(t, s + 15);
  if (!(isDigitValue(h0) && isDigitValue(h1) && isDigitValue(n0) && isDigitValue(n1)) || h0 * 10 + h1 > 23 || n0 * 10 + n1 > 59) return 0;
  let i = s + 16;
  if (i < e && t.charCodeAt(i) === COLON) {
    const s0 = digit(t, i + 1), s1 = digit(t, i + 2);
    if (i + 3 > e || !isDigitValue(s0) || !isDigitValue(s1) || s0 * 10 + s1 > 59) return 0;
    i += 3;
    if (i < e && t.charCodeAt(i) === DOT) {
      const fracStart = ++i;
      while (i < e && isDigit(t.charCodeAt(i))) i++;
      if (i === fracStart || i - fracStart > 6) return 0;
    }
  }
  if (i === e) return FITS.timestamp;
  const zone = t.charCodeAt(i);
  if (zone === 90) return i + 1 === e ? FITS.timestamptz : 0; // Z
  if (zone !== PLUS && zone !== MINUS) return 0;
  const rest = e - i - 1;
  const ok = rest === 2 || rest === 4 ? digitsAt(t, i + 1, e)
    : rest === 5 && t.charCodeAt(i + 3) === COLON && digitsAt(t, i + 1, i + 3) && digitsAt(t, i + 4, e);
  return ok ? FITS.timestamptz : 0;
}

const NUMBERS = FITS.integer | FITS.bigint | FITS.numeric;
const DATES = FITS.date | FITS.timestamp | FITS.timestamptz;

/**
 * The types the value t[s, e) fits (it is not empty), of those in `wanted` at least. Char codes, not
 * regular expressions: this runs for every cell.
 */
export function fitsAt(t: string, s: number, e: number, wanted = ALL): number {
  const c = t.charCodeAt(s);
  const first = c === PLUS || c === MINUS ? s + 1 : s;
  // "02134" is an identifier (a zip code, an account), not the number 2134: leading zeros keep a column as text.
  if (t.charCodeAt(first) === 48 && first + 1 < e && isDigit(t.charCodeAt(first + 1))) return 0;
  if (isDigit(c)) return ((wanted & NUMBERS) !== 0 && fitsNumber(t, s, e)) || ((wanted & DATES) !== 0 ? fitsDateTime(t, s, e) : 0);
  if (c === PLUS || c === MINUS || c === DOT) return fitsNumber(t, s, e);
  return isWord(t, s, e, 'true') || isWord(t, s, e, 'false') ? FITS.boolean : 0;
}

/** t[s, e) is `word` in any case (word in lower case letters). */
function isWord(t: string, s: number, e: number, word: string): boolean {
  if (e - s !== word.length) return false;
  for (let k = 0; k < word.length; k++) if ((t.charCodeAt(s + k) | 32) !== word.charCodeAt(k)) return false;
  return true;
}

/** Infers column types value by value, in constant memory. Empty cells are NULL and fit every type. */
export class TypeInference {
  readonly masks: Int32Array;
  readonly seen: Uint8Array;

  constructor(columnCount: number) {
    this.masks = new Int32Array(columnCount).fill(ALL);
    this.seen = new Uint8Array(columnCount);
  }

  add(record: string[]): void {
    for (let i = 0; i < record.length; i++) this.addAt(i, record[i], 0, record[i].length);
  }

  /** Column k holds t[s, e); `text` says that value can only be text (it holds a quote). */
  addAt(k: number, t: string, s: number, e: number, text = false): void {
    if (s === e || this.masks[k] === 0) return;
    this.seen[k] = 1;
    this.masks[k] = text ? 0 : this.masks[k] & fitsAt(t, s, e, this.masks[k]);
  }

  types(): ColumnType[] {
    return Array.from(this.masks, (mask, i) => {
      // A column with no values at all says nothing about its type: text is the one that takes anything later.
      if (!this.seen[i]) return 'text';
      for (const type of ['boolean', 'integer', 'bigint', 'numeric', 'date', 'timestamp', 'timestamptz'] as const) {
        if (mask & FITS[type]) return type;
      }
      return 'text';
    });
  }
}
