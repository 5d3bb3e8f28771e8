import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { from as copyFrom } from 'pg-copy-streams';
import { type DataSource } from '../../store/data-sources';
import type { ColumnType } from '../../core/data-source';
import type { Db } from '../../store/pool';
import { CsvImportError } from './csv-records';
import { CsvScan } from './scan-csv';
import { copySql, isDataRefusal, loadStaged, type CsvTarget } from './staging';

/**
 * A CSV imported as its bytes arrive (a large resource while the MCP server still sends it): its
 * first MiB is scanned for the header and the types, then each further piece of whole records is
 * scanned and goes to COPY as it is. Memory holds a piece, never the file.
 *
 * Only a text PostgreSQL reads as this scan does, whose types the first MiB tells, is taken this
 * way. Anything else (a type that widens later, carriage returns, blank lines, a `\.` line, a NUL,
 * invalid CSV) rolls the load back and answers undefined: the caller imports the whole text as it
 * always did (importCsv), which names an error's line and spools nothing to memory but the text.
 */

/** The text scanned for types before anything is loaded: as importCsv's guess. */
const GUESS_CHARS = 1 << 20;
/** A record longer than this is left to the whole import. */
const MAX_RECORD_CHARS = 64 << 20;
const PROGRESS_BYTES = 8 << 20;

export interface CsvStreamRequest extends Omit<CsvTarget, 'bytes'> {
  /** the text scanned for types before anything is loaded (tests make it small) */
  guessChars?: number;
  onProgress?: () => void;
  /** the types of the whole text, when a scan of it found them (csvTypes): no guess then */
  types?: ColumnType[];
  /** asked once every row is loaded, before anything is visible: false rolls the load back */
  confirm: () => Promise<boolean>;
}

/** The text cannot go to COPY as it arrives: the load is rolled back, and the whole text imported instead. */
class NotAsItArrives extends Error {}

/** Where the last record of a text that starts at a record's start ends: after its last line feed outside quotes; 0 when none. */
export function lastRecordEnd(text: string): number {
  let cut = 0;
  let inQuotes = false;
  for (let at = 0; ;) {
    const quote = text.indexOf('"', at);
    if (!inQuotes) {
      const feed = text.lastIndexOf('\n', (quote === -1 ? text.length : quote) - 1);
      if (feed >= at) cut = feed + 1;
    }
    if (quote === -1) return cut;
    inQuotes = !inQuotes;
    at = quote + 1;
  }
}

/** The bytes as texts of whole records: a text ends after a record, the last one with the bytes. */
async function* recordTexts(bytes: AsyncIterable<Buffer>, counted: { bytes: number }, guessChars: number, onProgress?: () => void): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let sinceProgress = 0;
  // The first text holds the guess's worth of records, not just what the first cut finds.
  let least = guessChars;
  for await (const piece of bytes) {
    counted.bytes += piece.length;
    sinceProgress += piece.length;
    if (sinceProgress >= PROGRESS_BYTES) {
      sinceProgress = 0;
      onProgress?.();
    }
    pending += decoder.write(piece);
    if (pending.length < guessChars) continue;
    const cut = lastRecordEnd(pending);
    if (cut < least) {
      if (pending.length > least + MAX_RECORD_CHARS) throw new NotAsItArrives();
      continue;
    }
    least = 1;
    yield pending.slice(0, cut);
    pending = pending.slice(cut);
  }
  pending += decoder.end();
  if (pending) yield pending;
}

/**
 * The header and the types, from the first texts: at least one record's worth, as the header alone
 * tells no type; the header alone when the types are known.
 */
async function guess(texts: AsyncGenerator<string>, typesKnown: boolean): Promise<{ head: string; scan: CsvScan }> {
  let head = '';
  for (;;) {
    const next = await texts.next();
    if (next.done && !head) throw new NotAsItArrives();
    if (!next.done) head += next.value;
    const scan = new CsvScan(head);
    scan.scanTo(head.length);
    if (!scan.streamable) throw new NotAsItArrives();
    if (scan.rowCount > 0 || next.done || typesKnown) return { head, scan };
  }
}

/** The types of a whole CSV read from `bytes`, one piece in memory at a time; undefined when it cannot go to COPY as it is. */
export async function csvTypes(bytes: AsyncIterable<Buffer>, onProgress?: () => void, signal?: AbortSignal): Promise<ColumnType[] | undefined> {
  const texts = recordTexts(bytes, { bytes: 0 }, GUESS_CHARS, onProgress);
  try {
    const { scan } = await guess(texts, false);
    for await (const text of texts) {
      signal?.throwIfAborted();
      if (!scan.scanPiece(text)) return undefined;
    }
    return scan.types();
  } catch (err) {
    if (err instanceof NotAsItArrives || err instanceof CsvImportError) return undefined;
    throw err;
  } finally {
    await texts.return(undefined);
  }
}

/** The table of a CSV read from `bytes` as they arrive; undefined when it must be imported whole (see above). */
export async function importCsvStream(db: Db, req: CsvStreamRequest, bytes: AsyncIterable<Buffer>): Promise<DataSource | undefined> {
  const counted = { bytes: 0 };
  const texts = recordTexts(bytes, counted, req.guessChars ?? GUESS_CHARS, req.onProgress);
  try {
    const { head, scan } = await guess(texts, Boolean(req.types));
    if (req.types && req.types.length !== scan.width) throw new NotAsItArrives();
    const columns = req.types ? scan.names.map((name, i) => ({ name, type: req.types![i] })) : scan.columns();
    // Known types hold for the whole text; guessed ones must hold for each piece.
    const typesHold = () => Boolean(req.types) || scan.types().every((type, i) => type === columns[i].type);
    const target = { ...req, bytes: 0 };
    return await loadStaged(db, target, columns, async (client, table) => {
      const copy = client.query(copyFrom(copySql(table, columns, true)));
      async function* data(): AsyncGenerator<Buffer> {
        yield Buffer.from(head.slice(scan.dataStart));
        for await (const text of texts) {
          if (!scan.scanPiece(text) || !typesHold()) throw new NotAsItArrives();
          yield Buffer.from(text);
        }
      }
      await pipeline(Readable.from(data()), copy, ...(req.signal ? [{ signal: req.signal }] as const : []));
      if (copy.rowCount !== scan.rowCount) throw new Error(`COPY loaded ${copy.rowCount} rows where the scan counted ${scan.rowCount}`);
      if (!(await req.confirm())) throw new NotAsItArrives();
      target.bytes = counted.bytes;
      return scan.rowCount;
    });
  } catch (err) {
    if (req.signal?.aborted) throw req.signal.reason ?? err;
    // A refusal of PostgreSQL's: the whole import finds out why and says so.
    if (err instanceof NotAsItArrives || err instanceof CsvImportError || isDataRefusal(err)) return undefined;
    throw err;
  } finally {
    await texts.return(undefined);
  }
}
