/**
 * What goes to COPY ... FROM STDIN: the data records of the text, as bytes, in chunks small enough that
 * memory stays bounded by the resource itself.
 */
import { CsvRecords } from './csv-records';

const CHUNK_CHARS = 1 << 20;
const PROGRESS_CHARS = 8 << 20;

/**
 * The text from `from` on, in UTF-8 chunks that never split a surrogate pair; `beforeEach(end)` runs
 * before the chunk that ends at text offset `end` goes.
 */
export function* verbatimChunks(
  text: string, from: number, onProgress?: () => void, beforeEach?: (end: number) => void,
): Generator<Buffer> {
  let sinceProgress = 0;
  for (let start = from; start < text.length;) {
    let end = Math.min(start + CHUNK_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    beforeEach?.(end);
    yield Buffer.from(text.slice(start, end));
    sinceProgress += end - start;
    if (sinceProgress >= PROGRESS_CHARS) {
      sinceProgress = 0;
      onProgress?.();
    }
    start = end;
  }
}

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const escapeChar = (c: string) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r');

/**
 * The data records (the header skipped) in COPY's text format: for the files PostgreSQL's CSV reader
 * would read differently (carriage returns, blank lines, a `\.` line). Empty cells are \N, i.e. NULL.
 */
export function* copyTextChunks(text: string, width: number, onProgress?: () => void): Generator<Buffer> {
  const records = new CsvRecords(text, width);
  const { starts, ends } = records;
  records.next();
  let batch = '';
  let sinceProgress = 0;
  while (records.next()) {
    let line = '';
    for (let k = 0; k < width; k++) {
      if (k > 0) line += '\t';
      if (starts[k] === ends[k]) {
        line += '\\N';
        continue;
      }
      const value = records.value(k);
      line += SPECIAL.test(value) ? value.replace(SPECIALS, escapeChar) : value;
    }
    batch += line + '\n';
    if (batch.length >= CHUNK_CHARS) {
      sinceProgress += batch.length;
      yield Buffer.from(batch);
      batch = '';
      if (sinceProgress >= PROGRESS_CHARS) {
        sinceProgress = 0;
        onProgress?.();
      }
    }
  }
  if (batch) yield Buffer.from(batch);
}
