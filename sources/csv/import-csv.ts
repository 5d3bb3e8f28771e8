import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import { type DataSource } from '../../store/data-sources';
import type { Db } from '../../store/pool';
import { type CsvColumn } from '../../core/data-source';
import { copyTextChunks, verbatimChunks } from './copy-data';
import { CsvImportError, lineOfRecord } from './csv-records';
import { CsvScan } from './scan-csv';
import { copySql, isDataRefusal, loadStaged, type CsvTarget } from './staging';

export { CsvImportError } from './csv-records';
export { tableBaseName, threadSchemaName } from './staging';

export interface CsvImportRequest extends CsvTarget {
  /** the decoded CSV; the MCP message already holds it whole, so it is read twice rather than copied */
  text: string;
  /** called every so often during a long import (activity heartbeats) */
  onProgress?: () => void;
}

function load(db: Db, req: CsvImportRequest, scan: CsvScan, columns: CsvColumn[]): Promise<DataSource> {
  return loadStaged(db, req, columns, async (client, target) => {
    const options = req.signal ? [{ signal: req.signal }] as const : [];
    // The data alone goes to COPY (never its header), so PostgreSQL's "line N" is data record N.
    const verbatim = scan.done ? scan.verbatim : scan.streamable;
    const copy = client.query(copyFrom(copySql(target, columns, verbatim)));
    const chunks = !verbatim ? copyTextChunks(req.text, columns.length, req.onProgress)
      : scan.done ? verbatimChunks(req.text, scan.dataStart, req.onProgress)
      : scannedChunks(scan, columns, req.onProgress);
    await pipeline(Readable.from(chunks), copy, ...options);
    // What was checked must be what was loaded: a disagreement between the scan and PostgreSQL is a defect, not bad CSV.
    if (copy.rowCount !== scan.rowCount) throw new Error(`COPY loaded ${copy.rowCount} rows where the scan counted ${scan.rowCount}`);
    return scan.rowCount;
  });
}

/** The part of the text scanned first, whose types are the guess the text streams to COPY with. */
const GUESS_CHARS = 1 << 20;

/** The streamed text outgrew the types guessed from its beginning: it is loaded again, with the types of the whole. */
class GuessOutgrown extends Error {}

/**
 * The text as it is, each chunk scanned before it goes, so that COPY works on one chunk while the
 * next is scanned. A record that breaks the guessed types stops the stream (CSV errors too).
 */
function scannedChunks(scan: CsvScan, columns: CsvColumn[], onProgress?: () => void): Generator<Buffer> {
  return verbatimChunks(scan.text, scan.dataStart, onProgress, (end) => {
    scan.scanTo(end);
    const types = scan.types();
    if (columns.some((c, i) => c.type !== types[i])) throw new GuessOutgrown();
  });
}

/** After this many single-column fallbacks every typed column falls back at once, so a file costs a bounded number of loads. */
const MAX_COLUMN_FALLBACKS = 4;

/**
 * Imports a CSV resource as a table of the thread. Bad CSV → CsvImportError naming the file line;
 * database trouble (a dropped connection) → the error as it is, so the caller may retry.
 */
export async function importCsv(db: Db, req: CsvImportRequest): Promise<DataSource> {
  const scan = new CsvScan(req.text);
  scan.scanTo(scan.dataStart + GUESS_CHARS);
  // A text PostgreSQL may read as it is streams to COPY behind the scan; any other is scanned whole first.
  if (!scan.streamable) await scan.finish(req.onProgress, req.signal);
  const textColumns = new Set<number>();
  for (let fallbacks = 0; ; fallbacks++) {
    req.signal?.throwIfAborted();
    const columns = scan.columns().map((c, i) => (textColumns.has(i) ? { ...c, type: 'text' as const } : c));
    try {
      return await load(db, req, scan, columns);
    } catch (err) {
      if (err instanceof CsvImportError) throw err;
      const refused = err instanceof GuessOutgrown ? undefined : refusedColumn(err, columns);
      if (!(err instanceof GuessOutgrown) && refused === undefined) throw asImportError(err, scan);
      // The whole text is checked, and its types known, before it is loaded again.
      await scan.finish(req.onProgress, req.signal);
      // PostgreSQL refused a value for a type the scan inferred (e.g. the offset +16): that column is text after all.
      columns.forEach((c, i) => {
        if (c.type !== 'text' && (i === refused || refused === -1 || fallbacks >= MAX_COLUMN_FALLBACKS)) textColumns.add(i);
      });
    }
  }
}

/** COPY's error context (PostgreSQL's English form): `COPY <table>, line <n>[, column <name>][: "<value>"]`. */
const COPY_CONTEXT = /^COPY [^,]+, line (\d+)(?:, column ([^:]+))?/;
/** Data exceptions that are not about a value's type: a malformed COPY stream or bytes outside the encoding. */
const NOT_TYPE_REFUSALS = new Set(['22P04', '22021', '22P05']);

/**
 * The index of the typed column whose value PostgreSQL refused; -1 when a typed column was refused
 * but its name is not in the error; undefined when the error is no refusal of a typed column.
 */
function refusedColumn(err: unknown, columns: CsvColumn[]): number | undefined {
  const e = err as { code?: string; where?: string };
  if (typeof e.code !== 'string' || !e.code.startsWith('22') || NOT_TYPE_REFUSALS.has(e.code)) return undefined;
  const name = COPY_CONTEXT.exec(e.where ?? '')?.[2];
  const index = columns.findIndex((c) => c.name === name);
  if (index !== -1) return columns[index].type === 'text' ? undefined : index;
  return columns.some((c) => c.type !== 'text') ? -1 : undefined;
}

/**
 * PostgreSQL's own refusals of the data (class 22, limits in 54) are the CSV's fault; the rest may be transient.
 * A refused value names its line exactly; a refused row (too big) is found while a batch of rows is written,
 * and PostgreSQL then names the batch's last line read, so that line is an upper bound.
 */
function asImportError(err: unknown, scan: CsvScan): unknown {
  if (!isDataRefusal(err)) return err;
  const e = err as { message?: string; where?: string };
  const context = COPY_CONTEXT.exec(e.where ?? '');
  const line = context ? lineOfRecord(scan.text, Math.min(Number(context[1]), scan.rowCount)) : undefined;
  if (!line) return new CsvImportError(`invalid CSV: ${e.message}`);
  if (context?.[2]) return new CsvImportError(`invalid CSV: line ${line}, column ${context[2]}: ${e.message}`);
  return new CsvImportError(`invalid CSV: ${e.message} (a row on line ${line} or before)`);
}
