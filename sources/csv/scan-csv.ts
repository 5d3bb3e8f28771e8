import { MAX_COLUMNS, TypeInference, columnNames } from './columns';
import { type CsvColumn, type ColumnType } from '../../core/data-source';
import { CsvImportError, CsvRecords } from './csv-records';

export { CsvImportError } from './csv-records';

const lineOf = (text: string, index: number) => {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
};

/**
 * A line that is `\.` alone, which PostgreSQL's CSV reader takes for the end of the data. `more`:
 * the text is a piece, more to come, so its end is not a line's end.
 */
function hasEndMarkerLine(text: string, from: number, more = false): boolean {
  for (let i = text.indexOf('\\.', from); i !== -1; i = text.indexOf('\\.', i + 2)) {
    const before = text.charCodeAt(i - 1);
    const after = text.charCodeAt(i + 2);
    if ((i === from || before === 10 || before === 13) && ((!more && i + 2 === text.length) || after === 10 || after === 13)) return true;
  }
  return false;
}

const SCAN_SLICE = 4 << 20;

/**
 * The scan of a CSV text: checks every record and infers column types without keeping rows, so
 * memory stays bounded by the resource itself. It runs in slices (`scanTo`), so that the text can
 * stream to COPY right behind it. Throws CsvImportError naming the file line.
 */
export class CsvScan {
  readonly names: string[];
  /** Where the first data record starts in the text (after the BOM and the header). */
  readonly dataStart: number;
  /**
   * Whether, by cheap checks of the whole text in advance, PostgreSQL's own CSV reader will read the
   * data exactly as this scan does, so the text may go to COPY as it is while the scan is still under
   * way: strict RFC 4180 (which the scan enforces) reads the same in both, but not blank lines (skipped
   * here), carriage returns (PostgreSQL wants one kind of line ending) or a `\.` line (its end of data).
   */
  readonly streamable: boolean;
  rowCount = 0;
  done = false;
  private readonly records: CsvRecords;
  private readonly inference: TypeInference;

  constructor(readonly text: string) {
    if (text.replace(/^\uFEFF/, '').trim() === '') throw new CsvImportError('invalid CSV: the file is empty (no header row)');
    const nul = text.indexOf('\0');
    if (nul !== -1) throw new CsvImportError(`invalid CSV: a NUL byte on line ${lineOf(text, nul)} (PostgreSQL text cannot hold it)`);
    this.records = new CsvRecords(text, MAX_COLUMNS + 1);
    const records = this.records;
    if (!records.next()) throw new CsvImportError('invalid CSV: the file is empty (no header row)');
    if (records.count > MAX_COLUMNS) {
      throw new CsvImportError(`invalid CSV: line ${records.recordLine} has ${records.count} columns; `
        + `PostgreSQL allows at most ${MAX_COLUMNS}`);
    }
    this.names = columnNames(Array.from({ length: records.count }, (_, k) => records.value(k)));
    this.dataStart = records.offset;
    this.inference = new TypeInference(records.count);
    this.streamable = !text.includes('\r') && !text.includes('\n\n', this.dataStart - 1) && !hasEndMarkerLine(text, this.dataStart);
  }

  get width(): number {
    return this.names.length;
  }

  /** Where the scan has got to in the text. */
  get offset(): number {
    return this.records.offset;
  }

  /** Once done: whether the data goes to COPY as it is (see `streamable`), judged on what the scan saw. */
  get verbatim(): boolean {
    return this.records.blankLines === 0 && !this.records.sawCr && !hasEndMarkerLine(this.text, this.dataStart);
  }

  /** The types inferred from the records scanned so far. */
  types(): ColumnType[] {
    return this.inference.types();
  }

  columns(): CsvColumn[] {
    const types = this.types();
    return this.names.map((name, i) => ({ name, type: types[i] }));
  }

  /** Scans whole records until the scan is at or past `offset` in the text, or at its end. */
  scanTo(offset: number): void {
    const { records, text, width } = this;
    while (records.offset < offset) {
      if (!records.next()) {
        this.done = true;
        return;
      }
      if (records.count !== width) {
        throw new CsvImportError(`invalid CSV: line ${records.recordLine} has ${records.count} fields, but the header has ${width}`);
      }
      this.addRecord(records);
    }
    if (records.offset >= text.length) this.done = true;
  }

  /**
   * Scans a further text under the same header (a CSV that arrives in pieces, the text given at
   * construction its first), which starts at a record's start: its rows count, its values widen the
   * types. `more`: the text is a piece, more to come, and a record it ends inside is left for the
   * next one. Answers how much of the text the records scanned hold (to the end unless `more`), or
   * false when PostgreSQL's CSV reader might read it otherwise (see `streamable`) or it holds a NUL
   * or a record of another width: the scan is then spent, and the whole text must be scanned anew.
   */
  scanPiece(piece: string, more = false): number | false {
    if (piece.charCodeAt(0) === 0xfeff || piece.includes('\r') || piece.includes('\0') || hasEndMarkerLine(piece, 0, more)) return false;
    const records = new CsvRecords(piece, this.width + 1);
    records.partial = more;
    while (records.next()) {
      if (records.count !== this.width) return false;
      this.addRecord(records);
    }
    return records.blankLines === 0 ? records.offset : false;
  }

  /** Counts the record just read (of the header's width) and types its values. */
  private addRecord(records: CsvRecords): void {
    const { starts, ends, text } = records;
    const { inference } = this;
    const { masks } = inference;
    for (let k = 0; k < this.width; k++) {
      if (masks[k] !== 0 && starts[k] !== ends[k]) inference.addAt(k, text, starts[k], ends[k], records.escaped(k));
    }
    this.rowCount++;
  }

  /** Scans the rest, letting a cancellation and the heartbeat through between slices. */
  async finish(onProgress?: () => void, signal?: AbortSignal): Promise<void> {
    while (!this.done) {
      this.scanTo(this.offset + SCAN_SLICE);
      onProgress?.();
      await new Promise(setImmediate);
      signal?.throwIfAborted();
    }
  }
}
