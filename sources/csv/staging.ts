import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { findDataSourceByUri, upsertDataSource, type DataSource } from '../../store/data-sources';
import type { Db } from '../../store/pool';
import { type CsvColumn } from '../../core/data-source';
import { MAX_IDENTIFIER_BYTES, quoteIdent, sanitiseName, uniqueNames } from './columns';

/** Where a CSV goes and what the registry says of it. */
export interface CsvTarget {
  threadId: string;
  uri: string;
  integrationId: string | null;
  /** the resource's size as it arrived, for the registry */
  bytes: number;
  signal?: AbortSignal;
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

async function tableNameFor(tx: pg.PoolClient, threadId: string, uri: string): Promise<string> {
  const existing = await findDataSourceByUri(tx, threadId, uri);
  if (existing) return existing.tableName;
  const { rows } = await tx.query<{ table_name: string }>('SELECT table_name FROM data_sources WHERE thread_id = $1', [threadId]);
  return uniqueNames([tableBaseName(uri)], rows.map((r) => r.table_name))[0];
}

/** COPY into the staging table (`target`, quoted), as CSV with empty cells NULL, or in COPY's text format. */
export const copySql = (target: string, columns: CsvColumn[], csv: boolean) => (csv
  // FORCE_NULL: a quoted empty cell ("") is NULL too, as an unquoted one is (contract: empty cells are NULL).
  ? `COPY ${target} FROM STDIN WITH (FORMAT csv, FREEZE, FORCE_NULL (${columns.map((c) => quoteIdent(c.name)).join(', ')}))`
  : `COPY ${target} FROM STDIN WITH (FREEZE)`);

/** PostgreSQL refused the data itself (class 22, limits in 54): the CSV's fault, not a transient failure. */
export const isDataRefusal = (err: unknown): boolean => {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
};

/**
 * Loads into a staging table (`fill` copies the rows into `target` and says how many) and renames
 * it into place in one transaction, with the registry row: a failure, a cancel or a killed worker
 * (its connection drops) rolls everything back, so nothing is visible and nothing is left behind;
 * the next attempt starts from scratch.
 */
export async function loadStaged(
  db: Db, req: CsvTarget, columns: CsvColumn[], fill: (client: pg.PoolClient, target: string) => Promise<number>,
): Promise<DataSource> {
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
    const rowCount = await fill(client, `${quoteIdent(schema)}.${quoteIdent(staging)}`);
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
