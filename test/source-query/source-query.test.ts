import { randomBytes, randomUUID } from 'node:crypto';
import type { ActivityDeps } from '../../activities/deps';
import { parseToolArguments } from '../../activities/tools/native-tool';
import { sourceQueryExecution, sourceQueryTool } from '../../activities/tools/source-query';
import { importCsv, threadSchemaName } from '../../sources/csv/import-csv';
import { insertAgent } from '../../store/agents';
import { createPool, type Db } from '../../store/pool';
import { insertThread } from '../../store/threads/threads';
import { executeAsThreadRole, runSourceQuery, SOURCE_QUERY_DEFAULTS } from '../../sources/query/source-query';
import { threadLoginName } from '../../sources/query/thread-login';
import { dropThreadRole, ensureThreadRole, ROLES_UNAVAILABLE, threadRoleName } from '../../sources/query/thread-role';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';

const SALES = 'region,amount,day,at,paid\nnorth,10.5,2024-01-31,2024-01-31 08:30:00,true\nsouth,-3,2024-02-29,,false\neast,,,,\n';
const SECRET = 'token\ntop-secret-value\n';

describe.each(['embedded', 'external'] as const)('source_query on the %s PostgreSQL', (kind) => {
  let db: Db;
  /** one connection only: every query reuses it, so a statement that changed the session would show */
  let solo: Db;
  let agentId: string;
  const threads: string[] = [];
  let mine: string;
  let other: string;

  const newThread = async () => {
    const id = (await insertThread(db, agentId)).id;
    threads.push(id);
    return id;
  };
  const importText = (threadId: string, uri: string, text: string) =>
    importCsv(db, { threadId, uri, integrationId: null, text, bytes: Buffer.byteLength(text) });
  const query = (sql: string, extra: Record<string, unknown> = {}, timeoutMs = 2_000) =>
    runSourceQuery(solo, mine, { sql, ...extra }, { timeoutMs });
  const dataState = async () => ({
    sales: (await db.query(`SELECT * FROM ${threadSchemaName(mine)}.sales ORDER BY region`)).rows,
    secret: (await db.query(`SELECT * FROM ${threadSchemaName(other)}.secret`)).rows,
    tables: (await db.query('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema IN ($1, $2)',
      [threadSchemaName(mine), threadSchemaName(other)])).rows[0].n,
  });
  /** what a pooled connection must look like between queries */
  const sessionState = async () => (await solo.query(
    `SELECT current_user AS who, current_setting('statement_timeout') AS timeout, current_setting('search_path') AS path,
       current_setting('transaction_read_only') AS ro, current_setting('TimeZone') AS tz,
       (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks`,
  )).rows[0];

  let baselineData: Awaited<ReturnType<typeof dataState>>;
  let baselineSession: Awaited<ReturnType<typeof sessionState>>;

  beforeAll(async () => {
    db = createPool(testStack().databases[kind], logger);
    solo = createPool(testStack().databases[kind], logger, 1);
    agentId = (await insertAgent(db, { name: `sq-${randomUUID()}`, model: { provider: 'scripted', script: [] } })).id;
    mine = await newThread();
    other = await newThread();
    await importText(mine, 'fixture://data/sales.csv', SALES);
    await importText(other, 'fixture://data/secret.csv', SECRET);
    baselineData = await dataState();
    baselineSession = await sessionState();
  });
  afterAll(async () => {
    for (const id of threads) await dropThreadRole(db, id);
    await solo.end();
    await db.end();
  });

  test('a SELECT comes back as a compact table: numbers, dates and timestamps plain, NULL spelt out', async () => {
    const result = await query('SELECT region, amount, day, at, paid FROM sales ORDER BY amount NULLS LAST');
    expect(result).toEqual({
      ok: true, rowCount: 3,
      text: 'region | amount | day | at | paid\n'
        + 'south | -3 | 2024-02-29 | NULL | false\n'
        + 'north | 10.5 | 2024-01-31 | 2024-01-31 08:30:00 | true\n'
        + 'east | NULL | NULL | NULL | NULL\n(3 rows)',
    });
    const aggregated = await query("SELECT count(*) AS n, sum(amount) AS total, date_trunc('month', max(at)) AS m, now() > '2020-01-01' AS recent FROM sales");
    expect(aggregated.ok && aggregated.text).toBe('n | total | m | recent\n3 | 7.5 | 2024-01-01 00:00:00 | true\n(1 row)');
  });

  test('the limit argument caps the rows, and the note counts what was left out', async () => {
    const result = await query('TABLE sales', { limit: 1 });
    expect(result.ok && result.text.split('\n').slice(1)).toEqual([expect.stringMatching(/^(north|south|east) \|/), '… 2 more rows']);
    // The arguments are checked against the tool's schema before the query runs (activities/tools/source-query.ts).
    expect(parseToolArguments(sourceQueryTool, { sql: 'SELECT 1', limit: 0 })).toEqual({ ok: false, message: 'limit must be a positive integer' });
    expect(parseToolArguments(sourceQueryTool, { sql: '   ' })).toEqual({ ok: false, message: 'sql parameter is required' });
    expect(parseToolArguments(sourceQueryTool, { sql: 'SELECT 1', limit: null })).toEqual({ ok: true, args: { sql: 'SELECT 1' } });
  });

  const refused: [string, string, RegExp][] = [
    ['the multi-statement escape of the reference Postgres MCP server', 'SELECT 1; COMMIT; DROP TABLE sales', /exactly one statement/],
    ['SET TRANSACTION READ WRITE', 'SET TRANSACTION READ WRITE', /SET is not allowed/],
    ['SET statement_timeout', 'SET statement_timeout = 0', /SET is not allowed/],
    ['a CTE-wrapped DELETE', 'WITH gone AS (DELETE FROM sales RETURNING *) SELECT count(*) FROM gone', /DELETE is not allowed/],
    ['a comment-prefixed write', '/* SELECT */ -- harmless\nUPDATE sales SET amount = 0', /UPDATE is not allowed/],
    ['pg_read_file', "SELECT pg_read_file('/etc/passwd')", /pg_read_file is not allowed/],
    ['COPY TO PROGRAM', "COPY sales TO PROGRAM 'touch /tmp/pwned'", /COPY is not allowed/],
    ["another thread's schema", 'SELECT * FROM ds_placeholder.secret', /only tables of this thread can be read/],
    ['the system catalogs', 'SELECT relname FROM pg_class', /system catalog pg_class/],
    ['set_config back to the session user', "SELECT set_config('role', current_user, true)", /set_config is not allowed/],
  ];
  test.each(refused)('refuses %s, leaving the data and the pooled connection as they were', async (_name, sql, reason) => {
    const result = await query(sql.replace('ds_placeholder', threadSchemaName(other)));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toMatch(/^refused: /);
    expect(!result.ok && result.message).toMatch(reason);
    expect(await dataState()).toEqual(baselineData);
    expect(await sessionState()).toEqual(baselineSession);
    expect(await query('SELECT count(*) AS n FROM sales')).toMatchObject({ ok: true, text: 'n\n3\n(1 row)' });
  });

  test('pg_sleep(600) is cut off by the statement timeout; the connection is fine afterwards', async () => {
    const started = Date.now();
    const result = await query('SELECT pg_sleep(600)', {}, 1_500);
    expect(result).toEqual({ ok: false, message: 'canceling statement due to statement timeout' });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await sessionState()).toEqual(baselineSession);
    expect(await dataState()).toEqual(baselineData);
    expect(await query('SELECT 2 AS two')).toMatchObject({ ok: true, text: 'two\n2\n(1 row)' });
  });

  test('a cartesian join of 10M rows is capped at the default rows, with the exact count of the rest', async () => {
    const result = await query('SELECT a, b FROM generate_series(1, 10000) a, generate_series(1, 1000) b', {}, 30_000);
    expect(result.ok).toBe(true);
    const lines = result.ok ? result.text.split('\n') : [];
    expect(lines).toHaveLength(SOURCE_QUERY_DEFAULTS.defaultRows + 2);
    expect(lines[lines.length - 1]).toBe(`… ${10_000_000 - SOURCE_QUERY_DEFAULTS.defaultRows} more rows`);
    expect(await sessionState()).toEqual(baselineSession);
  });

  test('the second wall holds without the parser: role, read-only transaction, extended protocol', async () => {
    const target = await ensureThreadRole(solo, mine);
    const run = (sql: string) => executeAsThreadRole(solo, target, sql, 10, { ...SOURCE_QUERY_DEFAULTS, timeoutMs: 5_000 });
    const otherSchema = threadSchemaName(other);
    expect(await run(`SELECT * FROM ${otherSchema}.secret`)).toEqual({ ok: false, message: `permission denied for schema ${otherSchema}` });
    expect(await run('SELECT * FROM secret')).toEqual({ ok: false, message: 'relation "secret" does not exist' });
    expect(await run('SELECT id FROM public.agents')).toEqual({ ok: false, message: 'permission denied for table agents' });
    expect(await run("SELECT pg_read_file('/etc/hostname')")).toEqual({ ok: false, message: 'permission denied for function pg_read_file' });
    // PostgreSQL 16 refuses a write function in a read-only transaction; 15 runs it, and the rollback takes it back.
    const lo = await run('SELECT lo_create(0) AS oid');
    const oid = lo.ok ? lo.text.split('\n')[1] : '0';
    if (!lo.ok) expect(lo.message).toBe('cannot execute lo_create() in a read-only transaction');
    expect((await db.query('SELECT count(*)::int AS n FROM pg_largeobject_metadata WHERE oid = $1', [oid])).rows[0].n).toBe(0);
    // Closes the wrapper's parenthesis: three statements, which only the simple protocol would run.
    expect(await run('SELECT 1) AS x; DROP TABLE sales; SELECT * FROM (SELECT 1'))
      .toEqual({ ok: false, message: 'cannot insert multiple commands into a prepared statement' });
    // These would outlive the statement on a pooled connection, were it not for the rollback and the unlock.
    expect(await run("SELECT set_config('statement_timeout', '0', false), pg_advisory_lock(42)")).toMatchObject({ ok: true });
    expect(await sessionState()).toEqual(baselineSession);
    expect(await dataState()).toEqual(baselineData);
  });

  test('past the parser, no role change reaches the engine\'s tables or another thread\'s', async () => {
    const target = await ensureThreadRole(db, mine);
    // The other thread's roles exist too, as they would once it ran a query.
    await ensureThreadRole(db, other);
    const run = (sql: string) => executeAsThreadRole(db, target, sql, 10, { ...SOURCE_QUERY_DEFAULTS, timeoutMs: 5_000 });
    const otherSchema = threadSchemaName(other);
    const engineUser = (await db.query<{ u: string }>('SELECT current_user AS u')).rows[0].u;
    const readAfter = (setRole: string, sql: string) => run(`SELECT ${setRole}, query_to_xml('${sql}', true, true, '')`);
    // The reproduction: role "none" used to fall back to the engine's own login, which owns every table.
    expect(await readAfter("set_config('role', 'none', true)", 'select transport::text from public.integrations'))
      .toEqual({ ok: false, message: 'permission denied for table integrations' });
    // Back on the login role, even the thread's own tables are out of reach: it has no rights of its own.
    expect(await readAfter("set_config('role', 'none', true)", `select * from ${target.schema}.sales`))
      .toEqual({ ok: false, message: `permission denied for schema ${target.schema}` });
    expect(await readAfter("set_config('role', 'none', true)", `select * from ${otherSchema}.secret`))
      .toEqual({ ok: false, message: `permission denied for schema ${otherSchema}` });
    expect(await run("WITH r AS MATERIALIZED (SELECT set_config('role', 'none', true)) SELECT current_user FROM r"))
      .toMatchObject({ ok: true, text: `current_user\n${target.login}\n(1 row)` });
    // Becoming anyone else is refused: another thread's reader, the engine's user, a superuser, another session user.
    for (const role of [threadRoleName(other), engineUser, 'postgres', 'pg_read_all_data']) {
      expect(await readAfter(`set_config('role', '${role}', true)`, `select * from ${otherSchema}.secret`))
        .toEqual({ ok: false, message: `permission denied to set role "${role}"` });
    }
    for (const user of [engineUser, threadLoginName(other)]) {
      const result = await readAfter(`set_config('session_authorization', '${user}', true)`, 'select transport::text from public.integrations');
      expect(result).toEqual({ ok: false, message: expect.stringMatching(/^permission denied to set (session authorization|parameter "session_authorization")/) });
    }
    // What the login role is: a member of this thread's reader alone, inheriting nothing, granted nothing.
    const { rows } = await db.query(
      `SELECT r.rolcanlogin, r.rolinherit, r.rolsuper, r.rolcreaterole, r.rolbypassrls,
         ARRAY(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid) AS member_of,
         has_table_privilege(r.rolname, 'public.integrations', 'SELECT') AS reads_integrations
       FROM pg_roles r WHERE r.rolname = $1`, [target.login]);
    expect(rows).toEqual([{
      rolcanlogin: true, rolinherit: false, rolsuper: false, rolcreaterole: false, rolbypassrls: false,
      member_of: [threadRoleName(mine)], reads_integrations: false,
    }]);
    // And the statement itself still reads its thread's data.
    expect(await run('SELECT count(*) AS n FROM sales')).toMatchObject({ ok: true, text: 'n\n3\n(1 row)' });
  });

  test('a re-imported table (dropped and renamed into place) stays readable by the thread role', async () => {
    const thread = await newThread();
    await importText(thread, 'fixture://data/t.csv', 'x\n1\n');
    expect(await runSourceQuery(db, thread, { sql: 'SELECT x FROM t' })).toMatchObject({ ok: true, text: 'x\n1\n(1 row)' });
    await importText(thread, 'fixture://data/t.csv', 'x,y\n2,b\n3,c\n');
    await importText(thread, 'fixture://data/u.csv', 'z\nnew table\n');
    expect(await runSourceQuery(db, thread, { sql: 'SELECT x, y, (SELECT z FROM u) FROM t ORDER BY x' }))
      .toMatchObject({ ok: true, text: 'x | y | z\n2 | b | new table\n3 | c | new table\n(2 rows)' });
  });

  test('concurrent first queries of a thread create its role once, and all succeed', async () => {
    const thread = await newThread();
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => runSourceQuery(db, thread, { sql: `SELECT ${i} AS i` })));
    expect(results.map((r) => r.ok && r.text)).toEqual([0, 1, 2, 3].map((i) => `i\n${i}\n(1 row)`));
    const roles = await db.query('SELECT rolcanlogin, rolsuper, rolcreaterole FROM pg_roles WHERE rolname = $1', [threadRoleName(thread)]);
    expect(roles.rows).toEqual([{ rolcanlogin: false, rolsuper: false, rolcreaterole: false }]);
  });

  test('the description lists the thread\'s tables with columns and row counts', async () => {
    const text = await describeSourceQuery(db, mine);
    expect(text).toContain('- sales (3 rows, from fixture://data/sales.csv): region (text), amount (numeric), day (date), at (timestamp), paid (boolean)');
    expect(text).not.toContain('secret');
    // A workflow that knows the thread has no tables yet spares the turn the read: then none are listed.
    expect(await describeSourceQuery(db, mine, false)).not.toContain('sales');
  });

  /** What the LLM is told of source_query in a thread. */
const describeSourceQuery = async (db: Db, threadId: string, hasDataSources = true) =>
  sourceQueryExecution.native!.describe({ deps: { db } as ActivityDeps, threadId, integrations: [], hasDataSources });

describe('where the database user cannot create roles', () => {
    const login = `dsq_test_nocreaterole_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    let limited: Db;
    beforeAll(async () => {
      await db.query(`CREATE ROLE ${login} LOGIN NOCREATEROLE NOSUPERUSER PASSWORD '${password}'`);
      const url = new URL(testStack().databases[kind]);
      url.username = login;
      url.password = password;
      limited = createPool(url.toString(), logger, 1);
    });
    afterAll(async () => {
      await limited.end();
      await db.query(`DROP ROLE IF EXISTS ${login}`);
    });

    test('the tool is disabled with a clear message, in its result and in its description', async () => {
      expect(await runSourceQuery(limited, mine, { sql: 'SELECT 1' })).toEqual({ ok: false, message: ROLES_UNAVAILABLE });
      expect(await describeSourceQuery(limited, mine)).toContain(`This tool is unavailable here: ${ROLES_UNAVAILABLE}`);
    });
  });
});
