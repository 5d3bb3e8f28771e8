import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../platform/logger';

export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

/**
 * The engine's own statements look rows up by key: a generic plan is the right plan for each of
 * them, whatever its values. Planned generically from the first execution, a named statement
 * (statementName) is planned once per connection, where PostgreSQL's default plans it afresh at
 * each of its first five executions on every connection: bench:load's busiest statements cost 0.8-3 ms
 * of the server's CPU to bind that way, against 0.1-0.3 ms once planned. Users' SQL (source_query)
 * runs on connections of its own (sources/query/thread-login.ts), with PostgreSQL's default.
 */
const GENERIC_PLANS = 'SET plan_cache_mode = force_generic_plan';

/**
 * Connections stay ten minutes once idle, and with them their prepared statements (parsed and
 * planned once per connection) and their backends' caches: a pause between bursts of runs does not
 * cost the next burst a new backend per connection (a fork, the password exchange, the catalog
 * caches warmed again) and every statement its preparation again (bench:load's engine rounds are
 * about 70 s apart: with a minute, every other round started with new backends). Holding them
 * longer asks the server for no more connections than a busy pool holds anyway (`max`), only for longer.
 */
const IDLE_MS = 10 * 60_000;

export function createPool(url: string, logger: Logger, max = 10): Db {
  return withErrorLog(new pg.Pool({
    connectionString: url, max, idleTimeoutMillis: IDLE_MS, allowExitOnIdle: true,
    // Awaited before the pool hands the new connection out; a connection that fails it is not handed out.
    onConnect: async (client) => {
      await client.query(GENERIC_PLANS);
    },
  }), logger);
}

/** Another pool on `db`'s database, with its own connections (and so its own queue). */
export function createSiblingPool(db: Db, logger: Logger, max: number): Db {
  // db's options, onConnect included.
  return withErrorLog(new pg.Pool({ ...db.options, max }), logger);
}

function withErrorLog(pool: Db, logger: Logger): Db {
  // An idle client that loses its server emits 'error' on the pool; without a listener it would crash the process.
  pool.on('error', (err) => logger.warn({ err: err.message }, 'idle PostgreSQL client error'));
  return pool;
}

/**
 * A failure to reach the database (refused, reset, shut down), as opposed to a statement's own
 * error: worth waiting out. SQLSTATE class 08 is a connection exception; 57P01–57P03 a shutdown.
 */
export function isUnreachableDb(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || /^57P0[123]$/.test(code);
  const message = String((err as Error | null)?.message ?? '');
  return ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH'].includes(String(code))
    || /Connection terminated|connection timeout|Client has encountered a connection error/i.test(message);
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

const statementNames = new Map<string, string>();
/**
 * The same few statements run several times per turn: named, each connection parses and plans
 * them once (a prepared statement) and then only binds values, for about a third less of the
 * server's CPU time per statement. Only statements whose text the code fixes are named: a
 * connection keeps every prepared statement for its lifetime.
 */
export function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `engine_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** Whether the database answers (GET /readyz). */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

/** Holds an advisory lock until the caller's transaction ends: one holder at a time for `key`. */
export async function holdTransactionLock(tx: Queryable, key: number): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [key]);
}

/**
 * A question about the database (its user's rights, a stored secret) asked once per pool: the
 * answer is kept with the pool, and a failed look-up (the database briefly down) is asked again.
 */
export function oncePerPool<T>(ask: (db: Db) => Promise<T>): (db: Db) => Promise<T> {
  const answers = new WeakMap<Db, Promise<T>>();
  return (db) => {
    let answer = answers.get(db);
    if (!answer) {
      answer = ask(db);
      answer.catch(() => answers.delete(db));
      answers.set(db, answer);
    }
    return answer;
  };
}
