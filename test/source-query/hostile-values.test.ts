import { randomUUID } from 'node:crypto';
import { importCsv } from '../../sources/csv/import-csv';
import { insertAgent } from '../../store/agents';
import { createPool, type Db } from '../../store/pool';
import { insertThread } from '../../store/threads/threads';
import { runSourceQuery, SOURCE_QUERY_DEFAULTS } from '../../sources/query/source-query';
import { canLimitTempFiles, TEMP_FILES_UNLIMITED } from '../../sources/query/temp-file-limit';
import { dropThreadRole } from '../../sources/query/thread-role';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';

/*
 * A value or an error text too long for a JS string used to throw inside the PostgreSQL driver's
 * socket handler, where nothing catches it: the worker process exited, and each retry of the activity
 * took the next worker down the same way. These run in the test's own process: before the fix, the
 * first of them ended it.
 */
describe('source_query values larger than the output budget', () => {
  let db: Db;
  let threadId: string;

  beforeAll(async () => {
    db = createPool(testStack().databases.external, logger);
    const agentId = (await insertAgent(db, { name: `sq-${randomUUID()}`, model: { provider: 'scripted', script: [] } })).id;
    threadId = (await insertThread(db, agentId)).id;
    await importCsv(db, { threadId, uri: 'fixture://t.csv', integrationId: null, text: 'n\n1\n', bytes: 4 });
  });
  afterAll(async () => {
    await dropThreadRole(db, threadId);
    await db.end();
  });

  const query = (sql: string) => runSourceQuery(db, threadId, { sql }, { timeoutMs: 60_000 });

  test('a 540 MB value is refused as too large, and the process lives on', async () => {
    expect(await query("select repeat('x', 540000000) as big")).toEqual({ ok: false, message: 'value too large' });
    expect(await query('select n from t')).toMatchObject({ ok: true, text: 'n\n1\n(1 row)' });
  }, 120_000);

  test('an error text quoting a 540 MB value is refused too, not decoded', async () => {
    const before = process.memoryUsage().rss;
    expect(await query("select repeat('x', 540000000)::int as n")).toEqual({ ok: false, message: 'value too large' });
    // The message was refused from its length, before its bytes were buffered.
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
  }, 120_000);

  test('a value one byte over the budget is refused; one at the budget is shown as before', async () => {
    const budget = SOURCE_QUERY_DEFAULTS.maxBytes;
    expect(await query(`select repeat('y', ${budget + 1}) as v`)).toEqual({ ok: false, message: 'value too large' });
    expect(await query(`select repeat('é', ${budget / 2 + 1}) as v`)).toEqual({ ok: false, message: 'value too large' });
    const fits = await query(`select repeat('y', ${budget}) as v, 2 as w`);
    expect(fits).toEqual({ ok: true, rowCount: 1, text: `v | w\n${'y'.repeat(500)}… | 2\n(1 row)` });
  });

  test('a long database error is cut before it reaches the LLM', async () => {
    const result = await query("select repeat('z', 100000)::int as n");
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toMatch(/^invalid input syntax for type integer: "z+…$/);
    expect(!result.ok && result.message.length).toBeLessThanOrEqual(2_001);
  });

  test('repeated and empty column names keep their places and values as PostgreSQL prints them', async () => {
    const result = await query("select 1 as a, 'x' as a, true, null::int, '{1,2}'::int[], 1::float8 / 3, '2024-01-31 08:30'::timestamp");
    expect(result).toEqual({
      ok: true, rowCount: 1,
      text: 'a | a | ?column? | int4 | int4 | ?column? | timestamp\n1 | x | true | NULL | {1,2} | 0.3333333333333333 | 2024-01-31 08:30:00\n(1 row)',
    });
  });

  test('a query spilling to temporary files stops at temp_file_limit, not gigabytes later', async () => {
    const started = Date.now();
    const result = await query('select * from generate_series(1, 1e10) order by 1 desc');
    expect(result).toEqual({ ok: false, message: expect.stringMatching(/^temporary file size exceeds temp_file_limit \(262144kB\)/) });
    expect(Date.now() - started).toBeLessThan(60_000);
    // The limit is the login's: it holds for this thread's next query on a fresh connection too.
    expect(await query('select n from t')).toMatchObject({ ok: true });
  }, 120_000);
});

describe('whether the engine may limit source_query temporary files', () => {
  const password = 'pw-' + randomUUID();
  const user = `engine_limited_${process.pid}`;
  let admin: Db;
  let engine: Db;

  beforeAll(async () => {
    admin = createPool(testStack().databases.external, logger);
    await admin.query(`CREATE ROLE ${user} LOGIN CREATEROLE NOSUPERUSER PASSWORD '${password}'`);
    const url = new URL(testStack().databases.external);
    url.username = user;
    url.password = password;
    engine = createPool(url.toString(), logger, 1);
  });
  afterAll(async () => {
    await engine.end();
    await admin.query(`REVOKE SET ON PARAMETER temp_file_limit FROM ${user}`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS ${user}`);
    await admin.end();
  });

  test('a CREATEROLE user without the grant may not (the worker warns with the GRANT to give); with it, it may', async () => {
    expect(await canLimitTempFiles(engine)).toBe(false);
    expect(TEMP_FILES_UNLIMITED).toContain('GRANT SET ON PARAMETER temp_file_limit');
    await admin.query(`GRANT SET ON PARAMETER temp_file_limit TO ${user}`);
    const fresh = createPool((engine.options as { connectionString: string }).connectionString, logger, 1);
    try {
      expect(await canLimitTempFiles(fresh)).toBe(true);
    } finally {
      await fresh.end();
    }
  });
});
