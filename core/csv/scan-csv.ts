import { Readable } from 'node:stream';
import { CsvError, parse, type Options } from 'csv-parse';
import { MAX_COLUMNS, TypeInference, columnNames, type CsvColumn } from './columns';

/** A CSV that cannot be imported as it is; the message names the line, for the LLM and the log. */
export class CsvImportError extends Error {
  override name = 'CsvImportError';
}

/** One parser configuration for both passes, so that what was checked is exactly what is loaded. */
export const PARSE_OPTIONS: Options = {
  bom: true,
  // A blank line is no record, not a row of NULLs (and not a ragged row).
  skip_empty_lines: true,
  relax_column_count: false,
  relax_quotes: false,
};

const CHUNK_CHARS = 64 * 1024;

/** The text in chunks that never split a surrogate pair, so the parser's UTF-8 stays intact. */
export function* textChunks(text: string): Generator<string> {
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + CHUNK_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield text.slice(start, end);
    start = end;
  }
}

export const lineOf = (text: string, index: number) => {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
};

export interface CsvShape {
  columns: CsvColumn[];
  rowCount: number;
  /**
   * Whether PostgreSQL's own CSV reader will read the text exactly as csv-parse did, so the text
   * can go to COPY as it is instead of being parsed twice. Strict RFC 4180 (which the scan
   * enforces) reads the same in both; blank lines (skipped here), carriage returns (PostgreSQL
   * wants one line ending per file) and a lone `\.` line (its end-of-data marker) are handled
   * by re-encoding instead.
   */
  verbatim: boolean;
}

function describe(err: unknown, recordStartLine: number, headerLength: number | undefined): CsvImportError {
  if (!(err instanceof CsvError)) return new CsvImportError(`invalid CSV: ${(err as Error).message}`);
  const e = err as CsvError & { lines?: number; record?: string[] };
  if (err.code === 'CSV_QUOTE_NOT_CLOSED') {
    return new CsvImportError(`invalid CSV: the quoted field in the record starting on line ${recordStartLine} is never closed`);
  }
  if (err.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH' && e.record) {
    return new CsvImportError(`invalid CSV: line ${e.lines} has ${e.record.length} fields, but the header has ${headerLength}`);
  }
  return new CsvImportError(`invalid CSV: ${err.message}`);
}

/**
 * The first pass: checks the whole file and infers column types without keeping rows, so memory
 * stays bounded by the resource itself. Throws CsvImportError naming the line.
 */
export async function scanCsv(text: string, onProgress?: (rows: number) => void): Promise<CsvShape> {
  if (text.replace(/^\uFEFF/, '').trim() === '') throw new CsvImportError('invalid CSV: the file is empty (no header row)');
  const nul = text.indexOf('\0');
  if (nul !== -1) throw new CsvImportError(`invalid CSV: a NUL byte on line ${lineOf(text, nul)} (PostgreSQL text cannot hold it)`);

  let header: string[] | undefined;
  let inference: TypeInference | undefined;
  let rowCount = 0;
  let endMarker = false;
  let nextRecordLine = 1;
  // Kept by the parser itself: its error can overtake records still buffered for the loop below.
  let headerLength: number | undefined;
  const parser = Readable.from(textChunks(text)).pipe(parse({
    ...PARSE_OPTIONS,
    on_record: (record: string[], context) => {
      nextRecordLine = context.lines + 1;
      headerLength ??= record.length;
      return record;
    },
  }));
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (!header) {
        header = record;
        if (header.length > MAX_COLUMNS) {
          throw new CsvImportError(`invalid CSV: line 1 has ${header.length} columns; PostgreSQL allows at most ${MAX_COLUMNS}`);
        }
        inference = new TypeInference(header.length);
        continue;
      }
      if (record.length === 1 && record[0] === '\\.') endMarker = true;
      inference!.add(record);
      rowCount++;
      if (rowCount % 50_000 === 0) onProgress?.(rowCount);
    }
  } catch (err) {
    parser.destroy();
    if (err instanceof CsvImportError) throw err;
    throw describe(err, nextRecordLine, headerLength);
  }
  if (!header) throw new CsvImportError('invalid CSV: the file is empty (no header row)');
  const names = columnNames(header);
  const types = inference!.types();
  const verbatim = !endMarker && (parser as unknown as { info: { empty_lines: number } }).info.empty_lines === 0
    && !text.includes('\r') && !header.some((h) => h.includes('\n'));
  return { columns: names.map((name, i) => ({ name, type: types[i] })), rowCount, verbatim };
}
