/**
 * Column names and types of an imported CSV. Pure: no I/O, so the rules are unit-tested directly.
 */

/** PostgreSQL truncates identifiers to 63 bytes (NAMEDATALEN - 1), so uniqueness must hold after the cut. */
export const MAX_IDENTIFIER_BYTES = 63;
/** PostgreSQL's hard limit on the columns of a table. */
export const MAX_COLUMNS = 1600;

export type ColumnType = 'integer' | 'bigint' | 'numeric' | 'boolean' | 'date' | 'timestamp' | 'timestamptz' | 'text';

export interface CsvColumn {
  name: string;
  type: ColumnType;
}

function cutBytes(text: string, maxBytes: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > maxBytes) break;
    out += ch;
    bytes += size;
  }
  return out;
}

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
    let candidate = cutBytes(name, MAX_IDENTIFIER_BYTES);
    for (let n = 2; used.has(candidate); n++) {
      const suffix = `_${n}`;
      candidate = cutBytes(name, MAX_IDENTIFIER_BYTES - suffix.length) + suffix;
    }
    used.add(candidate);
    return candidate;
  });
}

export function columnNames(header: string[]): string[] {
  return uniqueNames(header.map((h, i) => sanitiseName(h, `column_${i + 1}`)));
}

/** A double-quoted identifier; names are already cut to 63 bytes, so PostgreSQL keeps them as written. */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

const INT = /^[+-]?\d{1,19}$/;
// Only forms PostgreSQL's numeric input accepts with the same meaning; exponents are bounded below.
const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?$/;
const BOOL = /^(true|false)$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(:(\d{2})(\.\d{1,6})?)?(Z|[+-]\d{2}(:?\d{2})?)?$/;
const INT4 = { min: -(2n ** 31n), max: 2n ** 31n - 1n };
const INT8 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };

function validDate(y: string, m: string, d: string): boolean {
  const year = Number(y);
  const month = Number(m);
  const day = Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Bit flags of the types a value fits; a column's type is the narrowest one all its values fit. */
const FITS = { integer: 1, bigint: 2, numeric: 4, boolean: 8, date: 16, timestamp: 32, timestamptz: 64 } as const;
const ALL = 127;

// "02134" is an identifier (a zip code, an account), not the number 2134: leading zeros keep a column as text.
const LEADING_ZERO = /^[+-]?0\d/;

function fits(value: string): number {
  if (LEADING_ZERO.test(value)) return 0;
  if (INT.test(value)) {
    const n = BigInt(value);
    if (n >= INT4.min && n <= INT4.max) return FITS.integer | FITS.bigint | FITS.numeric;
    if (n >= INT8.min && n <= INT8.max) return FITS.bigint | FITS.numeric;
    return FITS.numeric;
  }
  if (NUMERIC.test(value)) return FITS.numeric;
  if (BOOL.test(value)) return FITS.boolean;
  let m = DATE.exec(value);
  if (m) return validDate(m[1], m[2], m[3]) ? FITS.date : 0;
  m = TIMESTAMP.exec(value);
  if (m && validDate(m[1], m[2], m[3]) && Number(m[4]) < 24 && Number(m[5]) < 60 && Number(m[7] ?? 0) < 60) {
    return m[9] ? FITS.timestamptz : FITS.timestamp;
  }
  return 0;
}

/** Infers column types value by value, in constant memory. Empty cells are NULL and fit every type. */
export class TypeInference {
  private readonly masks: number[];
  private readonly seen: boolean[];

  constructor(columnCount: number) {
    this.masks = new Array<number>(columnCount).fill(ALL);
    this.seen = new Array<boolean>(columnCount).fill(false);
  }

  add(record: string[]): void {
    for (let i = 0; i < record.length; i++) {
      const value = record[i];
      if (value === '' || this.masks[i] === 0) continue;
      this.seen[i] = true;
      this.masks[i] &= fits(value);
    }
  }

  types(): ColumnType[] {
    return this.masks.map((mask, i) => {
      // A column with no values at all says nothing about its type: text is the one that takes anything later.
      if (!this.seen[i]) return 'text';
      for (const type of ['boolean', 'integer', 'bigint', 'numeric', 'date', 'timestamp', 'timestamptz'] as const) {
        if (mask & FITS[type]) return type;
      }
      return 'text';
    });
  }
}
