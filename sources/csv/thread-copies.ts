import { insertCopiedDataSource, listDataSources, type DataSource } from '../../store/data-sources';
import { inTransaction, type Db } from '../../store/pool';
import { quoteIdent } from './columns';
import { threadSchemaName } from './staging';

/**
 * Another thread's tables, copied into a thread's schema with their registry rows (a replay's
 * thread starts with those its original's thread had, a fork's those it had when the fork's turn
 * began): in one transaction under both threads' import locks (staging.ts), so a copy is whole
 * or absent. A source the thread has already (by its URI) is skipped: a retried preparation
 * copies nothing twice. Returns how many sources the thread has.
 */
export async function copyThreadSources(db: Db, threadId: string, sources: DataSource[]): Promise<number> {
  if (sources.length === 0) return 0;
  const schema = threadSchemaName(threadId);
  return inTransaction(db, async (tx) => {
    for (const locked of [threadId, ...new Set(sources.map((s) => s.threadId))].sort()) {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`data-sources:${locked}`]);
    }
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    const held = new Set((await listDataSources(tx, threadId)).map((s) => s.uri));
    const missing = sources.filter((s) => !held.has(s.uri));
    for (const source of missing) {
      await tx.query(`CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(source.tableName)}
        AS TABLE ${quoteIdent(source.schemaName)}.${quoteIdent(source.tableName)}`);
      const { id: _id, ...rest } = source;
      await insertCopiedDataSource(tx, { ...rest, threadId, schemaName: schema });
    }
    return held.size + missing.length;
  });
}
