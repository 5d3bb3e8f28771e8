import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isAscii } from 'node:buffer';
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
  /**
   * When the load was rolled back only because a type widened after the guess: the types of the
   * whole text, once the rest of it has been read and scanned (a second pass then needs no scan of
   * its own for them). Not called when the rest cannot go to COPY as it is.
   */
  onWidened?: (types: ColumnType[]) => void;
}

/** The text cannot go to COPY as it arrives: the load is rolled back, and the whole text imported instead. */
class NotAsItArrives extends Error {}
/** A type widened after the guess: the load is rolled back, and the rest of the text still scanned for the types. */
class Widened extends NotAsItArrives {}

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

/** A text, and whether it is all ASCII: its bytes are then its chars (latin1 encodes it as a copy). */
interface Text { text: string; ascii: boolean }

/**
 * The bytes decoded as they come. A piece of ASCII alone after a whole character is taken as it is,
 * without UTF-8's decoding; anything else goes through the UTF-8 decoder (invalid bytes become
 * U+FFFD, as the whole import reads them).
 */
async function* decoded(bytes: AsyncIterable<Buffer>, counted: { bytes: number }, onProgress?: () => void): AsyncGenerator<Text> {
  const decoder = new StringDecoder('utf8');
  // Nothing of a character is held in the decoder: the last piece ended on an ASCII byte.
  let whole = true;
  let sinceProgress = 0;
  for await (const piece of bytes) {
    counted.bytes += piece.length;
    sinceProgress += piece.length;
    if (sinceProgress >= PROGRESS_BYTES) {
      sinceProgress = 0;
      onProgress?.();
    }
    if (piece.length === 0) continue;
    const ascii = whole && isAscii(piece);
    whole = piece[piece.length - 1] < 0x80;
    yield ascii ? { text: piece.toString('latin1'), ascii } : { text: decoder.write(piece), ascii };
  }
  const rest = decoder.end();
  if (rest) yield { text: rest, ascii: false };
}

/**
 * The head of the text: at least `guessChars` of whole records (all of it when shorter), for the
 * header and the types; and the text after it, which starts at a record's start.
 */
async function readHead(
  texts: AsyncGenerator<Text>, guessChars: number, from: Text = { text: '', ascii: true },
): Promise<{ head: string; rest: Text; done: boolean }> {
  let { text: pending, ascii } = from;
  for (;;) {
    const next = await texts.next();
    if (next.done) return { head: pending, rest: { text: '', ascii: true }, done: true };
    pending += next.value.text;
    ascii &&= next.value.ascii;
    if (pending.length < guessChars) continue;
    const cut = lastRecordEnd(pending);
    if (cut >= guessChars) return { head: pending.slice(0, cut), rest: { text: pending.slice(cut), ascii }, done: false };
    if (pending.length > guessChars + MAX_RECORD_CHARS) throw new NotAsItArrives();
  }
}

/**
 * The header and the types, from the head: at least one record's worth, as the header alone tells
 * no type; the header alone when the types are known. Then each further text of whole records,
 * scanned (its rows counted, its values checked and typed) before it is given.
 */
async function scanned(
  texts: AsyncGenerator<Text>, guessChars: number, typesKnown: boolean,
): Promise<{ head: string; scan: CsvScan; pieces: AsyncGenerator<Text> }> {
  let { head, rest, done } = await readHead(texts, guessChars);
  for (;;) {
    if (!head && done) throw new NotAsItArrives();
    const scan = new CsvScan(head);
    scan.scanTo(head.length);
    if (!scan.streamable) throw new NotAsItArrives();
    if (scan.rowCount > 0 || done || typesKnown) return { head, scan, pieces: wholeRecords(scan, rest, texts, guessChars) };
    // A header alone so far: the head grows by the next guess's worth.
    const more = await readHead(texts, guessChars, rest);
    head += more.head;
    ({ rest, done } = more);
  }
}

/**
 * The texts after the head, gathered to at least `least` chars (a spool read as it is written gives
 * small pieces: each scan and COPY message costs), cut after their last whole record and scanned;
 * throws NotAsItArrives when one cannot go to COPY as it is.
 */
async function* wholeRecords(scan: CsvScan, first: Text, texts: AsyncGenerator<Text>, least: number): AsyncGenerator<Text> {
  let { text: pending, ascii } = first;
  /**
   * The texts since the last scan, joined only when scanned: `+=` would make a rope, whose every
   * char read then goes through an indirection (the scan took half as long again).
   */
  const parts = pending === '' ? [] : [pending];
  let length = pending.length;
  // A record longer than the texts so far is scanned again only once they have doubled: linear, not quadratic.
  let scanAt = least;
  for await (const next of texts) {
    if (length === 0) ascii = true;
    parts.push(next.text);
    length += next.text.length;
    ascii &&= next.ascii;
    if (length < scanAt) continue;
    pending = parts.join('');
    parts.length = 0;
    const used = scan.scanPiece(pending, true);
    if (used === false) throw new NotAsItArrives();
    if (used > 0) {
      yield { text: pending.slice(0, used), ascii };
      pending = pending.slice(used);
      scanAt = least;
    } else if (pending.length > MAX_RECORD_CHARS) {
      throw new NotAsItArrives();
    } else {
      scanAt = pending.length * 2;
    }
    if (pending !== '') parts.push(pending);
    length = pending.length;
  }
  pending = parts.join('');
  if (pending === '') return;
  if (scan.scanPiece(pending) === false) throw new NotAsItArrives();
  yield { text: pending, ascii };
}

/** The types once the rest of the pieces is scanned; undefined when the rest cannot go to COPY as it is. */
async function typesOfRest(scan: CsvScan, pieces: AsyncGenerator<Text>, signal?: AbortSignal): Promise<ColumnType[] | undefined> {
  try {
    // Scanned as they are read: the types are the scan's once every piece has passed.
    for await (const _piece of pieces) signal?.throwIfAborted();
    return scan.types();
  } catch (err) {
    if (err instanceof NotAsItArrives || err instanceof CsvImportError) return undefined;
    throw err;
  }
}

/** The types of a whole CSV read from `bytes`, one piece in memory at a time; undefined when it cannot go to COPY as it is. */
export async function csvTypes(
  bytes: AsyncIterable<Buffer>, onProgress?: () => void, signal?: AbortSignal,
): Promise<ColumnType[] | undefined> {
  const texts = decoded(bytes, { bytes: 0 }, onProgress);
  try {
    const { scan, pieces } = await scanned(texts, GUESS_CHARS, false);
    return await typesOfRest(scan, pieces, signal);
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
  const texts = decoded(bytes, counted, req.onProgress);
  let read: { scan: CsvScan; pieces: AsyncGenerator<Text> } | undefined;
  try {
    const { head, scan, pieces } = read = await scanned(texts, req.guessChars ?? GUESS_CHARS, Boolean(req.types));
    if (req.types && req.types.length !== scan.width) throw new NotAsItArrives();
    const columns = req.types ? scan.names.map((name, i) => ({ name, type: req.types![i] })) : scan.columns();
    // Known types hold for the whole text; guessed ones must hold for each piece.
    const typesHold = () => Boolean(req.types) || scan.types().every((type, i) => type === columns[i].type);
    const target = { ...req, bytes: 0 };
    return await loadStaged(db, target, columns, async (client, table) => {
      const copy = client.query(copyFrom(copySql(table, columns, true)));
      async function* data(): AsyncGenerator<Buffer> {
        yield Buffer.from(head.slice(scan.dataStart));
        // Not for-await: leaving the loop would close the pieces, which a widened type still reads.
        for (let next = await pieces.next(); !next.done; next = await pieces.next()) {
          if (!typesHold()) throw new Widened();
          yield Buffer.from(next.value.text, next.value.ascii ? 'latin1' : 'utf8');
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
    if (err instanceof Widened && read && req.onWidened) {
      const types = await typesOfRest(read.scan, read.pieces, req.signal);
      if (types) req.onWidened(types);
    }
    // A refusal of PostgreSQL's: the whole import finds out why and says so.
    if (err instanceof NotAsItArrives || err instanceof CsvImportError || isDataRefusal(err)) return undefined;
    throw err;
  } finally {
    await read?.pieces.return(undefined);
    await texts.return(undefined);
  }
}
