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

