/**
 * A strict RFC 4180 reader over the decoded text, one record at a time, without copying fields:
 * a field is a range of the text. Written for speed (the import is measured against `psql \copy`),
 * and the one reader of every pass, so what was checked is exactly what is loaded.
 */

/** A CSV that cannot be imported as it is; the message names the file line (header = line 1), for the LLM and the log. */
export class CsvImportError extends Error {
  override name = 'CsvImportError';
}

const COMMA = 44;
const QUOTE = 34;
const LF = 10;
const CR = 13;

/** Field flags. */
const QUOTED = 1;
/** The field holds a doubled quote (`""`), so its value is not the range as it is. */
const ESCAPED = 2;

export class CsvRecords {
  /** Field k of the current record is text[starts[k], ends[k]) (without its quotes); only the first `capacity` are kept. */
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  readonly flags: Uint8Array;
  /** Fields of the current record (it may exceed the capacity: such a record is refused by the caller). */
  count = 0;
  /** File line (1-based) where the current record starts. */
  recordLine = 1;
  /** Blank lines skipped, and whether a carriage return was seen: either keeps the text from going to COPY as it is. */
  blankLines = 0;
  sawCr = false;
  /**
   * The text is a piece of a longer one, more to come: a record the text ends inside (no line feed
   * after it yet) is not read. `next()` answers false before it, and the offset stays at its start.
   */
  partial = false;
  private pos: number;
  private line = 1;
  /** The cursor while a record is read: pos and line move to it once the whole record is. */
  private at = 0;
  private atLine = 1;

  constructor(readonly text: string, capacity: number) {
    this.pos = text.charCodeAt(0) === 0xfeff ? 1 : 0;
    this.starts = new Int32Array(capacity);
    this.ends = new Int32Array(capacity);
    this.flags = new Uint8Array(capacity);
  }

  /** Where the next record starts in the text. */
  get offset(): number {
    return this.pos;
  }

  /** Reads the next record; false at the end of the text. A blank line is no record (not a row of NULLs). */
  next(): boolean {
    if (!this.skipBlankLines()) return false;
    const recordStart = this.at;
    this.recordLine = this.atLine;
    let field = 0;
    for (;;) {
      if (this.text.charCodeAt(this.at) !== QUOTE) this.unquotedField(field);
      else if (!this.quotedField(field)) return this.unread(recordStart);
      field++;
      // The text ends inside the record, and more is to come: the record is read whole from there.
      if (this.partial && this.at >= this.text.length) return this.unread(recordStart);
      if (!this.separator(field)) break;
    }
    this.count = field;
    this.pos = this.at;
    this.line = this.atLine;
    return true;
  }

  /** Puts the cursor where the next record starts, past blank lines; false at the end of the text. */
  private skipBlankLines(): boolean {
    const { text } = this;
    let i = this.pos;
    let line = this.line;
    for (;;) {
      if (i >= text.length) {
        this.pos = i;
        return false;
      }
      const c = text.charCodeAt(i);
      if (c !== LF && c !== CR) break;
      i = this.pastLineBreak(i, c);
      line++;
      this.blankLines++;
    }
    this.at = i;
    this.atLine = line;
    return true;
  }

  /** Field `field` at the cursor, without quotes; a quote in it is refused. */
  private unquotedField(field: number): void {
    const { text } = this;
    const n = text.length;
    const start = this.at;
    let i = start;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === COMMA || c === LF || c === CR) break;
      if (c === QUOTE) {
        throw new CsvImportError(`invalid CSV: line ${this.atLine} has a quote inside an unquoted field (field ${field + 1}); `
          + 'quote the whole field and double the quotes in it');
      }
    }
    this.keep(field, start, i, 0);
    this.at = i;
  }

  /** Field `field`, whose opening quote is at the cursor; false when the text ends inside it and more is to come. */
  private quotedField(field: number): boolean {
    const { text } = this;
    const n = text.length;
    const start = this.at + 1;
    let i = start;
    let line = this.atLine;
    let flag = QUOTED;
    for (;;) {
      if (i >= n) {
        if (this.partial) return false;
        throw new CsvImportError(`invalid CSV: the quoted field in the record starting on line ${this.recordLine} is never closed`);
      }
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        if (text.charCodeAt(i + 1) !== QUOTE) break;
        flag = QUOTED | ESCAPED;
        i += 2;
        continue;
      }
      if (c === LF) line++;
      else if (c === CR) {
        this.sawCr = true;
        if (text.charCodeAt(i + 1) !== LF) line++;
      }
      i++;
    }
    this.keep(field, start, i, flag);
    this.at = i + 1;
    this.atLine = line;
    return true;
  }

  /** Moves the cursor past what follows field `field` (1-based): true for a comma, false at the record's end. */
  private separator(field: number): boolean {
    const i = this.at;
    if (i >= this.text.length) return false;
    const c = this.text.charCodeAt(i);
    if (c === COMMA) {
      this.at = i + 1;
      return true;
    }
    if (c !== LF && c !== CR) {
      throw new CsvImportError(`invalid CSV: line ${this.atLine} has text after the closing quote of field ${field}; `
        + 'double a quote that belongs to the value');
    }
    this.at = this.pastLineBreak(i, c);
    this.atLine++;
    return false;
  }

  /** Where the line break `c` at `i` ends (CR LF is one). */
  private pastLineBreak(i: number, c: number): number {
    if (c !== CR) return i + 1;
    this.sawCr = true;
    return this.text.charCodeAt(i + 1) === LF ? i + 2 : i + 1;
  }

  /** The field's range, if within the capacity. */
  private keep(field: number, start: number, end: number, flag: number): void {
    if (field >= this.starts.length) return;
    this.starts[field] = start;
    this.ends[field] = end;
    this.flags[field] = flag;
  }

  /** Leaves the record that starts at `start` for the text that will hold all of it. */
  private unread(start: number): false {
    this.pos = start;
    this.line = this.recordLine;
    this.count = 0;
    return false;
  }

  /** Whether field k of the current record holds a doubled quote: its value is then not the range as it is, and only text. */
  escaped(k: number): boolean {
    return (this.flags[k] & ESCAPED) !== 0;
  }

  /** The value of field k of the current record. */
  value(k: number): string {
    const raw = this.text.slice(this.starts[k], this.ends[k]);
    return this.escaped(k) ? raw.replace(/""/g, '"') : raw;
  }
}

/** The file line where data record `n` (1-based, the header not counted) starts: for PostgreSQL's errors, which count records. */
export function lineOfRecord(text: string, n: number): number | undefined {
  const records = new CsvRecords(text, 0);
  for (let i = 0; i <= n; i++) if (!records.next()) return undefined;
  return records.recordLine;
}
