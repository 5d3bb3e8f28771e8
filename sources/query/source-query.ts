import type pg from 'pg';
import { quoteIdent } from '../csv/columns';
import { threadSchemaName } from '../csv/import-csv';
import type { Db } from '../../store/pool';
import { checkSql } from './check-sql';
import { processQuerySlots } from './query-slots';
import { DriverReadError, guardReads, ReadTooLargeError } from './read-guard';
import { formatResultTable, type ResultTable } from './result-table';
import { connectThreadLogin, ThreadLoginError } from './thread-login';
import { ensureThreadRole, sourceQuerySupport, type ThreadTarget } from './thread-role';
import { shortened } from '../../core/truncated-text';

export interface SourceQueryOptions {
  /** statement_timeout of the query (and, separately, of the row count) */
  timeoutMs?: number;
  /** rows shown when the call gives no limit */
  defaultRows?: number;
  /** the most rows a call may ask for */
  maxRows?: number;
  /** the table's size in UTF-8 bytes, before the "more rows" line */
  maxBytes?: number;
  /** source queries one worker runs at once; each holds a database connection of its own */
  concurrency?: number;
  /** how long a query waits for one of those slots before it is refused */
  slotWaitMs?: number;
}

export const SOURCE_QUERY_DEFAULTS: Required<SourceQueryOptions> = {
  timeoutMs: 15_000, defaultRows: 100, maxRows: 1_000, maxBytes: 16 * 1024, concurrency: 4, slotWaitMs: 5_000,
};

const MAX_TIMEOUT_MS = 60_000;
/** SQLSTATE of a lock_timeout */
const LOCK_NOT_AVAILABLE = '55P03';
/** Counting what was not shown stops here: "… at least N more rows" beyond it. */
const COUNT_BOUND = 100_000_000;
/**
 * The largest message the query's connection reads: a row holds at most (maxBytes + 1) characters a
 * column, so only an error quoting a huge value comes near it.
 */
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;
/** The longest database error text passed on to the LLM. */
const MAX_ERROR_CHARS = 2_000;
export const VALUE_TOO_LARGE = 'value too large';

export type SourceQueryOutcome = { ok: true; text: string; rowCount: number } | { ok: false; message: string };

/** Every value as PostgreSQL prints it (cast to text in the query): no JS Date, no float rounding. */
const RAW_TEXT: pg.CustomTypesConfig = {
  getTypeParser: (() => (v: string) => v) as pg.CustomTypesConfig['getTypeParser'],
};

type Row = (string | null)[];
type RunQuery = (sql: string) => Promise<pg.QueryArrayResult<Row>>;

/** A PostgreSQL error (the query's fault: syntax, permission, timeout) as opposed to a lost connection. */
const boundedError = (message: string) => shortened(message, MAX_ERROR_CHARS + 1);

const isServerError = (err: unknown): err is { message: string; code: string } =>
  typeof (err as { code?: unknown })?.code === 'string' && /^[0-9A-Z]{5}$/.test((err as { code: string }).code);

/** The rows to show: the call's limit (checked by the tool's schema, activities/tools/source-query.ts), capped, or the default. */
const rowLimit = (limit: number | undefined, o: Required<SourceQueryOptions>) => Math.min(limit ?? o.defaultRows, o.maxRows);

/*
 * The checked statement goes inside a subquery: the LIMIT caps what the server produces (a 10M-row
 * join stops after limit+1 rows). The newline ends a trailing "--" comment of the statement.
 * Its columns are first described (LIMIT 0 reads no row), then each is fetched as text cut to one
 * character more than the output budget: no value larger than that ever reaches the worker, and the
 * one extra character tells that a value was cut. Columns are renamed by position (c1, c2…), since
 * a statement's own names may repeat or be empty.
 */
export const describeSql = (statement: string) => `SELECT * FROM (\n${statement}\n) AS source_query LIMIT 0`;
export function rowsSql(statement: string, columnCount: number, limit: number, maxChars: number): string {
  const names = Array.from({ length: columnCount }, (_, i) => `c${i + 1}`);
  const cells = names.map((n) => `left(${n}::text, ${maxChars + 1})`).join(', ');
  const alias = columnCount > 0 ? `(${names.join(', ')})` : '';
  return `SELECT ${cells} FROM (\n${statement}\n) AS source_query${alias} LIMIT ${limit + 1}`;
}
const countSql = (statement: string) =>
  `SELECT count(*) FROM (SELECT 1 FROM (\n${statement}\n) AS source_query LIMIT ${COUNT_BOUND}) AS counted`;

/**
 * Runs one statement in a read-only transaction as the thread's reader role, on a connection of its
 * own logged in as the thread's login role, with search_path on its schema. It does not check the
 * SQL: that is runSourceQuery's first wall. Exported so tests can prove that this second wall (the
 * login that can become this thread's reader and nothing else, the read-only transaction, the
 * extended protocol) holds on its own.
 */
export async function executeAsThreadRole(
  db: Db, target: ThreadTarget, statement: string, limit: number, o: Required<SourceQueryOptions>,
): Promise<SourceQueryOutcome> {
  let client: pg.Client;
  try {
    client = await connectThreadLogin(db, target.login);
  } catch (err) {
    if (err instanceof ThreadLoginError) return { ok: false, message: err.message };
    throw err;
  }
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  guardReads(client, MAX_MESSAGE_BYTES);
  const run: RunQuery = (sql) => {
    // The extended protocol takes one statement only; without values pg would use the simple one, which takes several.
    const config: pg.QueryArrayConfig & { queryMode: 'extended' } = {
      text: sql, values: [], queryMode: 'extended', rowMode: 'array', types: RAW_TEXT,
    };
    return client.query<Row>(config);
  };
  try {
    // REPEATABLE READ: the count sees the same snapshot as the rows.
    await client.query([
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
      `SET LOCAL statement_timeout = ${Math.max(1, Math.floor(o.timeoutMs))}`,
      `SET LOCAL search_path = ${quoteIdent(target.schema)}`,
      "SET LOCAL TimeZone = 'UTC'",
      "SET LOCAL DateStyle = 'ISO, YMD'",
      `SET LOCAL ROLE ${quoteIdent(target.role)}`,
    ].join('; '));
    const columns = (await run(describeSql(statement))).fields.map((f) => f.name);
    const sql = rowsSql(statement, columns.length, limit, o.maxBytes);
    const { rows, complete } = await fetchWithin(run, sql, limit, o.maxBytes);
    if (rows.some((row) => row.some((v) => v !== null && Buffer.byteLength(v) > o.maxBytes))) {
      return { ok: false, message: VALUE_TOO_LARGE };
    }
    const total = complete ? { count: rows.length, exact: true } : await countRows(client, run, statement);
    const text = formatResultTable({ columns, rows, total, maxBytes: o.maxBytes });
    return { ok: true, text, rowCount: rows.length };
  } catch (err) {
    if (isServerError(err) && !broken) return { ok: false, message: boundedError(err.message) };
    if (err instanceof ReadTooLargeError) return { ok: false, message: VALUE_TOO_LARGE };
    if (err instanceof DriverReadError) {
      return { ok: false, message: `the database's answer could not be read: ${boundedError(err.message)}` };
    }
    throw err;
  } finally {
    client.off('error', onError);
    client.on('error', () => undefined);
    // The session ends with the statement: nothing it set (a role, a setting, a lock) can outlive it.
    await client.end().catch(() => undefined);
  }
}

/**
 * The rows the LLM will be shown, fetched through a cursor within a byte budget: a result of huge
 * values stops at the budget instead of arriving whole. The first fetch takes one row, later ones
 * as many as the budget left seems to hold. `complete`: every row of the query is here.
 */
async function fetchWithin(
  run: RunQuery, sql: string, limit: number, maxBytes: number,
): Promise<{ rows: Row[]; complete: boolean }> {
  await run(`DECLARE source_query NO SCROLL CURSOR FOR ${sql}`);
  const rows: Row[] = [];
  let bytes = 0;
  for (let batch = 1; ; ) {
    const result = await run(`FETCH ${batch} FROM source_query`);
    for (const row of result.rows) {
      rows.push(row);
      bytes += row.reduce((n, v) => n + (v === null ? 4 : v.length) + 3, 0);
    }
    if (result.rows.length < batch) return { rows: rows.slice(0, limit), complete: rows.length <= limit };
    if (rows.length > limit || bytes > maxBytes) return { rows: rows.slice(0, limit), complete: false };
    const perRow = Math.max(1, bytes / rows.length);
    batch = Math.max(1, Math.min(limit + 1 - rows.length, Math.floor((maxBytes - bytes) / perRow) + 1, 200));
  }
}

/** How many rows the query makes, up to a bound; a count that times out leaves the shown rows intact. */
async function countRows(
  client: pg.ClientBase, run: RunQuery, statement: string,
): Promise<ResultTable['total']> {
  await client.query('SAVEPOINT count_rows');
  try {
    const { rows } = await run(countSql(statement));
    await client.query('RELEASE SAVEPOINT count_rows');
    const count = Number(rows[0][0]);
    return { count, exact: count < COUNT_BOUND };
  } catch (err) {
    if (!isServerError(err)) throw err;
    await client.query('ROLLBACK TO SAVEPOINT count_rows');
    return 'uncounted';
  }
}

/**
 * source_query for one thread: argument checks, the parser's allow-list, then the isolated run.
 * Refusals and the database's own errors come back as { ok: false, message }; only trouble with the
 * database connection itself throws (the caller may retry, the query being read-only).
 */
export async function runSourceQuery(
  db: Db, threadId: string, args: { sql: string; limit?: number }, options: SourceQueryOptions = {},
): Promise<SourceQueryOutcome> {
  const o = { ...SOURCE_QUERY_DEFAULTS, ...options };
  // The workflow's activity timeout assumes each of the two statements ends within a minute.
  o.timeoutMs = Math.min(Math.max(o.timeoutMs, 100), MAX_TIMEOUT_MS);
  const support = await sourceQuerySupport(db);
  if (!support.enabled) return { ok: false, message: support.reason };
  const checked = { sql: args.sql, limit: rowLimit(args.limit, o) };
  const verdict = await checkSql(checked.sql, threadSchemaName(threadId));
  if (!verdict.ok) return { ok: false, message: `refused: ${verdict.reason}` };
  // What reaches the server is exactly what passed the parser: the wrapped forms are checked too.
  // The rows' form differs by its column count only, which the describe gives: one column stands for any.
  const forms = [describeSql(verdict.statement), rowsSql(verdict.statement, 1, checked.limit, o.maxBytes), countSql(verdict.statement)];
  for (const wrapped of forms) {
    const again = await checkSql(wrapped, threadSchemaName(threadId));
    if (!again.ok) return { ok: false, message: `refused: ${again.reason}` };
  }
  let target: ThreadTarget;
  try {
    target = await ensureThreadRole(db, threadId);
  } catch (err) {
    if (err instanceof Error && (err as { code?: string }).code === LOCK_NOT_AVAILABLE) {
      return { ok: false, message: 'a data import into this thread is in progress; try again when it has finished' };
    }
    throw err;
  }
  // A slot per statement, so that slow queries never take every connection the database allows.
  const release = await processQuerySlots(o.concurrency).acquire(o.slotWaitMs);
  if (!release) {
    const busy = `the worker is running ${o.concurrency} source queries already and none ended within ${o.slotWaitMs / 1000} s`;
    return { ok: false, message: `${busy}; try again later` };
  }
  try {
    return await executeAsThreadRole(db, target, verdict.statement, checked.limit, o);
  } finally {
    release();
  }
}
