import { randomBytes } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { findDataSourceByUri, upsertDataSource, type DataSource } from '../db/data-sources';
import type { Db } from '../db/pool';
import { MAX_IDENTIFIER_BYTES, quoteIdent, sanitiseName, uniqueNames, type CsvColumn } from './columns';
import { CsvImportError, PARSE_OPTIONS, scanCsv, textChunks } from './scan-csv';

export { CsvImportError } from './scan-csv';

export interface CsvImportRequest {
  threadId: string;
  uri: string;
  integrationId: string | null;
  /** the decoded CSV; the MCP message already holds it whole, so it is read twice rather than copied */
  text: string;
  /** the resource's size as it arrived, for the registry */
  bytes: number;
  signal?: AbortSignal;
  /** called every so often during a long import (activity heartbeats) */
  onProgress?: () => void;
}

/** The schema that holds a thread's tables; the source_query role of the thread gets rights on it alone. */
export const threadSchemaName = (threadId: string) =>
  `ds_${sanitiseName(threadId, 'thread')}`.slice(0, MAX_IDENTIFIER_BYTES);

/** `fixture://data/Sales 2024.csv?x=1` → `sales_2024`. */
export function tableBaseName(uri: string): string {
  const path = uri.replace(/[?#].*$/, '').replace(/\/+$/, '');
  const last = path.slice(path.lastIndexOf('/') + 1).replace(/^[a-z][a-z0-9+.-]*:/i, '');
  return sanitiseName(last.replace(/\.csv$/i, ''), 'data');
}

/** SQLSTATEs of a value the inferred type refused: the import then falls back to text columns. */
const TYPE_REFUSALS = new Set(['22P02', '22003', '22007', '22008']);

/** COPY text format: backslash escapes, \N for NULL. Empty cells are NULL (contract). */
function copyLine(record: string[]): string {
  let line = '';
  for (let i = 0; i < record.length; i++) {
    const v = record[i];
    if (i > 0) line += '\t';
    if (v === '') line += '\\N';
    else if (/[\\\t\n\r]/.test(v)) line += v.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
    else line += v;
  }
  return line + '\n';
}

/** Parsed records → COPY lines, batched so the COPY stream sees few large writes. The header is skipped. */
function copyEncoder(onProgress?: () => void): Transform {
  let headerSeen = false;
  let batch = '';
  let rows = 0;
  return new Transform({
    writableObjectMode: true,
    transform(record: string[], _enc, done) {
      if (!headerSeen) {
        headerSeen = true;
        return done();
      }
      batch += copyLine(record);
      if (++rows % 50_000 === 0) onProgress?.();
      if (batch.length >= 256 * 1024) {
        const out = batch;
        batch = '';
        return done(null, out);
      }
      done();
    },
    flush(done) {
      done(null, batch || undefined);
    },
  });
}

/** Passes text through, heartbeating every few megabytes. */
function progress(onProgress?: () => void): Transform {
  let chars = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      chars += chunk.length;
      if (chars >= 8 * 1024 * 1024) {
        chars = 0;
        onProgress?.();
      }
      done(null, chunk);
    },
  });
}

async function tableNameFor(tx: pg.PoolClient, threadId: string, uri: string): Promise<string> {
  const existing = await findDataSourceByUri(tx, threadId, uri);
  if (existing) return existing.tableName;
  const { rows } = await tx.query<{ table_name: string }>('SELECT table_name FROM data_sources WHERE thread_id = $1', [threadId]);
  return uniqueNames([tableBaseName(uri)], rows.map((r) => r.table_name))[0];
}

/**
 * Loads into a staging table and renames it into place in one transaction, with the registry row:
 * a failure, a cancel or a killed worker (its connection drops) rolls everything back, so nothing is
 * visible and nothing is left behind; the next attempt starts from scratch.
 */
async function load(db: Db, req: CsvImportRequest, columns: CsvColumn[], rowCount: number, verbatim: boolean): Promise<DataSource> {
  const schema = threadSchemaName(req.threadId);
  const staging = `_staging_${randomBytes(8).toString('hex')}`;
  const client = await db.connect();
  let broken = false;
  // A checked-out client whose backend dies emits 'error'; unheard, it would crash the worker. The COPY rejects anyway.
  const onClientError = () => {
    broken = true;
  };
  client.on('error', onClientError);
  try {
    await client.query('BEGIN');
    // One import per thread at a time: two first imports would race on CREATE SCHEMA and on table names.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`data-sources:${req.threadId}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    const table = await tableNameFor(client, req.threadId, req.uri);
    const columnSql = columns.map((c) => `${quoteIdent(c.name)} ${c.type}`).join(', ');
    await client.query(`CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(staging)} (${columnSql})`);
    const target = `${quoteIdent(schema)}.${quoteIdent(staging)}`;
    const options = req.signal ? [{ signal: req.signal }] as const : [];
    if (verbatim) {
      // FORCE_NULL: a quoted empty cell ("") is NULL too, as an unquoted one is (contract: empty cells are NULL).
      const copy = client.query(copyFrom(`COPY ${target} FROM STDIN WITH (FORMAT csv, HEADER true, FORCE_NULL (${columns.map((c) => quoteIdent(c.name)).join(', ')}))`));
      await pipeline(Readable.from(textChunks(req.text.replace(/^\uFEFF/, ''))), progress(req.onProgress), copy, ...options);
    } else {
      const copy = client.query(copyFrom(`COPY ${target} FROM STDIN`));
      await pipeline(Readable.from(textChunks(req.text)), parse(PARSE_OPTIONS), copyEncoder(req.onProgress), copy, ...options);
    }
    await client.query(`DROP TABLE IF EXISTS ${quoteIdent(schema)}.${quoteIdent(table)}`);
    await client.query(`ALTER TABLE ${quoteIdent(schema)}.${quoteIdent(staging)} RENAME TO ${quoteIdent(table)}`);
    const source = await upsertDataSource(client, {
      threadId: req.threadId, uri: req.uri, integrationId: req.integrationId, schemaName: schema, tableName: table,
      columns, rowCount, bytes: req.bytes,
    });
    await client.query('COMMIT');
    return source;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    // A connection whose COPY was cut may be in any state: do not hand it to the next query.
    client.off('error', onClientError);
    client.release(broken || Boolean(req.signal?.aborted));
  }
}

/**
 * Imports a CSV resource as a table of the thread. Bad CSV → CsvImportError naming the line;
 * database trouble (a dropped connection) → the error as it is, so the caller may retry.
 */
export async function importCsv(db: Db, req: CsvImportRequest): Promise<DataSource> {
  const shape = await scanCsv(req.text, () => req.onProgress?.());
  req.signal?.throwIfAborted();
  try {
    return await load(db, req, shape.columns, shape.rowCount, shape.verbatim);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (!code || !TYPE_REFUSALS.has(code) || shape.columns.every((c) => c.type === 'text')) throw asImportError(err);
    // Inference is a subset of what PostgreSQL accepts, so this is a safety net, not a path we expect.
    return load(db, req, shape.columns.map((c) => ({ ...c, type: 'text' })), shape.rowCount, shape.verbatim);
  }
}

/** PostgreSQL's own refusals of the data (class 22, limits in 54) are the CSV's fault; the rest may be transient. */
function asImportError(err: unknown): unknown {
  const e = err as { code?: string; message?: string; where?: string };
  if (typeof e.code === 'string' && (e.code.startsWith('22') || e.code.startsWith('54'))) {
    const where = e.where ? ` (${e.where.split('\n')[0]})` : '';
    return new CsvImportError(`invalid CSV: ${e.message}${where}`);
  }
  return err;
}
