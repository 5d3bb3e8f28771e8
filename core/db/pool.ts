import pg from 'pg';
import type { Logger } from '../logger';

export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

export function createPool(url: string, logger: Logger, max = 10): Db {
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
  // An idle client that loses its server emits 'error' on the pool; without a listener it would crash the process.
  pool.on('error', (err) => logger.warn({ err: err.message }, 'idle PostgreSQL client error'));
  return pool;
}

export async function inTransaction<T>(pool: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
