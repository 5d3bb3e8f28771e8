import { randomUUID } from 'node:crypto';
import type { CsvColumn } from '../core/data-source';
import type { Queryable } from './pool';
import { storableJsonText, storableText } from './storable-text';

/** A table imported from an MCP resource into its thread's schema (contract: GET /v1/threads/:id/sources). */
export interface DataSource {
  id: string;
  threadId: string;
  uri: string;
  integrationId: string | null;
  schemaName: string;
  tableName: string;
  columns: CsvColumn[];
  rowCount: number;
  bytes: number;
  createdAt: string;
}

interface DataSourceRow {
  id: string; thread_id: string; uri: string; integration_id: string | null; schema_name: string; table_name: string;
  columns: CsvColumn[]; row_count: string; bytes: string; created_at: Date;
}

const toDataSource = (r: DataSourceRow): DataSource => ({
  id: r.id, threadId: r.thread_id, uri: r.uri, integrationId: r.integration_id, schemaName: r.schema_name,
  tableName: r.table_name, columns: r.columns, rowCount: Number(r.row_count), bytes: Number(r.bytes),
  createdAt: r.created_at.toISOString(),
});

export type NewDataSource = Omit<DataSource, 'id' | 'createdAt'>;

/** Inserts or, for a URI the thread already imported, replaces the entry (keeping its id). */
export async function upsertDataSource(tx: Queryable, source: NewDataSource): Promise<DataSource> {
  const { rows } = await tx.query<DataSourceRow>(
    `INSERT INTO data_sources (id, thread_id, uri, integration_id, schema_name, table_name, columns, row_count, bytes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (thread_id, uri) DO UPDATE SET integration_id = EXCLUDED.integration_id, table_name = EXCLUDED.table_name,
       schema_name = EXCLUDED.schema_name, columns = EXCLUDED.columns, row_count = EXCLUDED.row_count,
       bytes = EXCLUDED.bytes, created_at = now()
     RETURNING *`,
    // The URI and the column names come from an LLM and an MCP server.
    [`src_${randomUUID().replace(/-/g, '')}`, source.threadId, storableText(source.uri), source.integrationId, source.schemaName,
      source.tableName, storableJsonText(source.columns), source.rowCount, source.bytes],
  );
  return toDataSource(rows[0]);
}

export async function findDataSourceByUri(db: Queryable, threadId: string, uri: string): Promise<DataSource | undefined> {
  const { rows } = await db.query<DataSourceRow>('SELECT * FROM data_sources WHERE thread_id = $1 AND uri = $2', [threadId, uri]);
  return rows[0] && toDataSource(rows[0]);
}

export async function listDataSources(db: Queryable, threadId: string): Promise<DataSource[]> {
  const { rows } = await db.query<DataSourceRow>('SELECT * FROM data_sources WHERE thread_id = $1 ORDER BY created_at, id', [threadId]);
  return rows.map(toDataSource);
}


/**
 * The data sources a fork's thread starts with (store/runs/forks.ts): those of its original's
 * thread imported before the fork's turn began, i.e. by the time the original's last result before
 * that turn was stored (before the original run when forked at turn 1). The fork's own thread with each.
 */
export async function forkedDataSources(db: Queryable, forkRunId: string): Promise<{ threadId: string; sources: DataSource[] }> {
  const { rows } = await db.query<DataSourceRow & { fork_thread_id: string }>(
    `SELECT f.thread_id AS fork_thread_id, d.* FROM runs f JOIN runs o ON o.id = f.forked_from_run_id
       JOIN data_sources d ON d.thread_id = o.thread_id
     WHERE f.id = $1 AND d.created_at <= COALESCE((SELECT max(m.created_at) FROM run_messages m
         WHERE m.run_id = o.id AND m.turn >= 1 AND m.turn < f.forked_from_turn), o.created_at)
     ORDER BY d.created_at, d.id`,
    [forkRunId],
  );
  return { threadId: rows[0]?.fork_thread_id ?? '', sources: rows.map(toDataSource) };
}

/**
 * The data sources a replay's thread starts with (store/runs/replays.ts): those its original's
 * thread had when the original run began. The replay's own thread with them.
 */
export async function replayedDataSources(db: Queryable, replayRunId: string): Promise<{ threadId: string; sources: DataSource[] }> {
  const { rows } = await db.query<DataSourceRow & { replay_thread_id: string }>(
    `SELECT r.thread_id AS replay_thread_id, d.* FROM runs r JOIN runs o ON o.id = r.replay_of_run_id
       JOIN data_sources d ON d.thread_id = o.thread_id
     WHERE r.id = $1 AND d.created_at <= o.created_at
     ORDER BY d.created_at, d.id`,
    [replayRunId],
  );
  return { threadId: rows[0]?.replay_thread_id ?? '', sources: rows.map(toDataSource) };
}

/** A source copied to another thread, as it was recorded there (its import time kept); none when the thread has its URI already. */
export async function insertCopiedDataSource(tx: Queryable, source: Omit<DataSource, 'id'>): Promise<void> {
  await tx.query(
    `INSERT INTO data_sources (id, thread_id, uri, integration_id, schema_name, table_name, columns, row_count, bytes, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
    [`src_${randomUUID().replace(/-/g, '')}`, source.threadId, source.uri, source.integrationId, source.schemaName,
      source.tableName, storableJsonText(source.columns), source.rowCount, source.bytes, source.createdAt],
  );
}
