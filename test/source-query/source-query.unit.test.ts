import { checkSql } from '../../sources/query/check-sql';
import { messageSizeWatch } from '../../sources/query/read-guard';
import { formatResultTable } from '../../sources/query/result-table';
import { sourceCatalogue } from '../../sources/query/source-catalogue';
import { ROLES_UNAVAILABLE, threadRoleName } from '../../sources/query/thread-role';
import type { DataSource } from '../../store/data-sources';

const SCHEMA = 'ds_thr_me';

describe('the source_query SQL check (libpg-query parse tree)', () => {
  test.each([
    ['SELECT * FROM sales WHERE amount > 10', 'SELECT * FROM sales WHERE amount > 10'],
    ['TABLE sales;', 'TABLE sales'],
    ['VALUES (1, \'a\'), (2, \'b\')', 'VALUES (1, \'a\'), (2, \'b\')'],
    ['WITH t AS (SELECT region, sum(amount) s FROM sales GROUP BY 1) SELECT * FROM t ORDER BY s DESC', undefined],
    ['SELECT extract(year FROM day), trim(region), count(*) FILTER (WHERE paid) FROM ds_thr_me.sales GROUP BY 1, 2', undefined],
    ['SELECT row_number() OVER (ORDER BY day), coalesce(x, 0), greatest(a, b) FROM sales -- trailing comment', undefined],
    ['SELECT \'é;\' AS "x;y" ;  ', 'SELECT \'é;\' AS "x;y"'],
  ])('allows %s', async (sql, statement) => {
    const verdict = await checkSql(sql, SCHEMA);
    expect(verdict).toEqual({ ok: true, statement: statement ?? sql });
  });

  test.each([
    ['SELECT 1; COMMIT; DROP TABLE sales', /exactly one statement is allowed, got 3 \(SELECT, transaction control, DROP\)/],
    ['SET TRANSACTION READ WRITE', /SET is not allowed/],
    ['SET statement_timeout = 0', /SET is not allowed/],
    ['WITH gone AS (DELETE FROM sales RETURNING *) SELECT * FROM gone', /DELETE is not allowed inside a query/],
    ['WITH x AS (UPDATE sales SET amount = 0 RETURNING 1) SELECT 1', /UPDATE is not allowed inside a query/],
    ['/* just a comment */ DELETE FROM sales', /DELETE is not allowed/],
    ['-- read only, promise\nINSERT INTO sales VALUES (1)', /INSERT is not allowed/],
    ["SELECT pg_read_file('/etc/passwd')", /function pg_read_file is not allowed/],
    ["COPY sales TO PROGRAM 'id'", /COPY is not allowed/],
    ["COPY (SELECT 1) TO '/tmp/x'", /COPY is not allowed/],
    ['SELECT * FROM ds_thr_other.sales', /only tables of this thread can be read, not ds_thr_other.sales/],
    ['SELECT * FROM public.integrations', /not public.integrations/],
    ['SELECT * FROM information_schema.tables', /not information_schema.tables/],
    ['SELECT * FROM pg_class', /^the system catalog pg_class cannot be read: only the tables of this thread are readable$/],
    ['SELECT * FROM sales FOR UPDATE', /FOR UPDATE\/SHARE/],
    ['SELECT * INTO stolen FROM sales', /SELECT INTO/],
    ["SELECT set_config('role', 'postgres', true)", /function set_config/],
    ["SELECT current_setting('data_directory')", /function current_setting/],
    ["SELECT dblink('host=x', 'SELECT 1')", /function dblink/],
    ["SELECT lo_import('/etc/passwd')", /function lo_import/],
    ["SELECT * FROM pg_ls_dir('.')", /function pg_ls_dir/],
    ['SELECT pg_advisory_lock(1)', /function pg_advisory_lock/],
    ['SELECT pg_catalog.pg_terminate_backend(1)', /function pg_catalog.pg_terminate_backend/],
    ['SELECT public.my_func()', /function public.my_func/],
    ["SELECT 'sales'::regclass", /type regclass/],
    ['SELECT 1 OPERATOR(public.+) 1', /operator public.\+/],
    ['SELECT * FROM sales TABLESAMPLE system_time(1000)', /sampling method system_time/],
    ['SELECT $1', /parameters/],
    ['EXPLAIN ANALYZE DELETE FROM sales', /EXPLAIN is not allowed/],
    ['DO $$ BEGIN DELETE FROM sales; END $$', /DO is not allowed/],
    ['LISTEN x', /^LISTEN is not allowed: only a single SELECT, VALUES, TABLE or WITH query may run$/],
    ['SELEC 1', /syntax error/],
    ['   ', /./],
    ['SELECT xmlparse(document \'<a/>\')', /XML/],
    ["SELECT '<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><x/>'::xml", /type xml/],
  ])('refuses %s', async (sql, reason) => {
    const verdict = await checkSql(sql, SCHEMA);
    expect(verdict.ok).toBe(false);
    expect(!verdict.ok && verdict.reason).toMatch(reason);
  });

  test.each([
    ['a WHERE subquery', "SELECT * FROM sales WHERE amount > (SELECT length(pg_read_file('x')))"],
    ['ORDER BY', "SELECT * FROM sales ORDER BY pg_read_file('x')"],
    ['a LATERAL join', "SELECT * FROM sales, LATERAL (SELECT pg_read_file('x')) f"],
    ['a VALUES row', "VALUES ((SELECT pg_read_file('x')))"],
    ['a UNION branch', "SELECT 'a' UNION SELECT pg_read_file('x')"],
    ['an aggregate FILTER', "SELECT count(*) FILTER (WHERE pg_read_file('x') = '') FROM sales"],
    ['a window PARTITION BY', "SELECT sum(amount) OVER (PARTITION BY pg_read_file('x')) FROM sales"],
    ['a recursive CTE', "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + length(pg_read_file('x')) FROM t) SELECT * FROM t"],
    ['a quoted name', "SELECT \"pg_read_file\"('x')"],
    ['upper case', "SELECT PG_READ_FILE('x')"],
    ['a Unicode escape', "SELECT U&\"pg_read_fil\\0065\"('x')"],
  ])('a refused function is found in %s', async (_where, sql) => {
    await expect(checkSql(sql, SCHEMA)).resolves.toEqual({ ok: false, reason: 'the function pg_read_file is not allowed: only common built-in functions may be called' });
  });

  test.each([
    ['SELECT * FROM (SELECT * FROM ds_thr_other.t) s', 'only tables of this thread can be read, not ds_thr_other.t: use bare table names'],
    ['SELECT * FROM sales WHERE id IN (SELECT id FROM public.users)', 'only tables of this thread can be read, not public.users: use bare table names'],
    ['SELECT * FROM "DS_THR_ME".sales', 'only tables of this thread can be read, not DS_THR_ME.sales: use bare table names'],
    ['SELECT * FROM db.ds_thr_me.sales', 'only tables of this thread can be read, not db.ds_thr_me.sales'],
    ['SELECT * FROM pg_catalog.pg_authid', 'only tables of this thread can be read, not pg_catalog.pg_authid: use bare table names'],
    ['SELECT * FROM "pg_authid"', 'the system catalog pg_authid cannot be read: only the tables of this thread are readable'],
    ['TABLE pg_class', 'the system catalog pg_class cannot be read: only the tables of this thread are readable'],
    ["SELECT CAST('sales' AS pg_catalog.regclass)", 'the type pg_catalog.regclass is not allowed'],
    ["SELECT '1'::public.money2", 'the type public.money2 is not allowed'],
    ['SELECT 1 OPERATOR(ds_thr_me.+) 1', 'the operator ds_thr_me.+ is not allowed'],
    ["SELECT nextval('s')", 'the function nextval is not allowed: only common built-in functions may be called'],
    ['SELECT * FROM sales FOR KEY SHARE', 'FOR UPDATE/SHARE takes row locks; only reading is allowed'],
    ["SELECT * FROM XMLTABLE('/a' PASSING '<a/>' COLUMNS x int)", 'XMLTABLE is not available'],
  ])('refuses %s, saying why', async (sql, reason) => {
    await expect(checkSql(sql, SCHEMA)).resolves.toEqual({ ok: false, reason });
  });

  test.each([
    ['CREATE TABLE x AS SELECT 1', 'CREATE TABLE AS'], ['CALL p()', 'CALL'], ['PREPARE q AS SELECT 1', 'PREPARE'], ['EXECUTE q', 'EXECUTE'],
    ['DECLARE c CURSOR FOR SELECT 1', 'DECLARE CURSOR'], ['SET ROLE postgres', 'SET'], ['RESET ROLE', 'SET'], ['SHOW ALL', 'SHOW'],
    ['BEGIN', 'transaction control'], ['VACUUM', 'VACUUM'],
  ])('%s is named in its refusal', async (sql, kind) => {
    await expect(checkSql(sql, SCHEMA)).resolves.toEqual({ ok: false, reason: `${kind} is not allowed: only a single SELECT, VALUES, TABLE or WITH query may run` });
  });

  test.each([
    ['a dollar-quoted string', 'SELECT $$; DELETE FROM sales$$ AS t', 'SELECT $$; DELETE FROM sales$$ AS t'],
    ['a leading comment', '/* ; DELETE FROM sales */ SELECT 1', 'SELECT 1'],
    ['a trailing comment', 'SELECT 1 /* ; DELETE FROM sales */', 'SELECT 1 /* ; DELETE FROM sales */'],
    ['empty statements around it', ';SELECT 1;;', 'SELECT 1'],
    ['the thread\'s own schema, named', 'SELECT * FROM ds_thr_me.pg_notes', 'SELECT * FROM ds_thr_me.pg_notes'],
    ['built-in casts, operators, sampling and set-returning functions', "SELECT '1'::int, 1 OPERATOR(pg_catalog.+) 1 FROM sales TABLESAMPLE bernoulli(10), generate_series(1, 3)", undefined],
  ])('allows %s, and runs the one statement', async (_what, sql, statement) => {
    await expect(checkSql(sql, SCHEMA)).resolves.toEqual({ ok: true, statement: statement ?? sql });
  });

  test('a query longer than 100 KB is refused before parsing', async () => {
    const verdict = await checkSql(`SELECT '${'x'.repeat(100_001)}'`, SCHEMA);
    expect(verdict).toEqual({ ok: false, reason: 'the query is longer than 100000 bytes' });
  });

  test.each([
    ['3,000 nested coalesce(', `select ${'coalesce('.repeat(3000)}1${')'.repeat(3000)}`],
    ['20,000 chained additions', `select ${'1+'.repeat(20_000)}1`],
    ['1,500 nested subqueries', `select ${'(select '.repeat(1500)}1${')'.repeat(1500)}`],
    ['300 nested coalesce( (parsed, but deeper than allowed)', `select ${'coalesce('.repeat(300)}1${')'.repeat(300)}`],
  ])('a statement with %s is refused as nested too deeply, not thrown', async (_name, sql) => {
    await expect(checkSql(sql, SCHEMA)).resolves.toEqual({ ok: false, reason: 'the statement is nested too deeply' });
  });

  test('a NUL character is refused as such (the parser would stop reading at it)', async () => {
    await expect(checkSql('SELECT 1\u0000; DROP TABLE sales', SCHEMA))
      .resolves.toEqual({ ok: false, reason: 'the query contains a NUL character' });
  });
});

describe('the compact result table', () => {
  test('header and rows joined by " | ", NULL spelt out, separators and newlines escaped, row count at the end', () => {
    const text = formatResultTable({
      columns: ['id', 'note', 'day'], rows: [['1', 'a|b', '2024-01-31'], ['2', null, 'line\nbreak']],
      total: { count: 2, exact: true }, maxBytes: 16_384,
    });
    expect(text).toBe('id | note | day\n1 | a\\|b | 2024-01-31\n2 | NULL | line\\nbreak\n(2 rows)');
  });

  test('rows beyond the byte cap are counted into "… N more rows"; an inexact count says "at least"', () => {
    const rows = Array.from({ length: 100 }, (_, i) => [String(i), 'x'.repeat(100)]);
    const text = formatResultTable({ columns: ['i', 'pad'], rows, total: { count: 10_000_000, exact: true }, maxBytes: 1024 });
    const lines = text.split('\n');
    expect(Buffer.byteLength(lines.slice(0, -1).join('\n'))).toBeLessThanOrEqual(1024);
    const shown = lines.length - 2;
    expect(lines[lines.length - 1]).toBe(`… ${10_000_000 - shown} more rows`);
    expect(formatResultTable({ columns: ['i'], rows: [['1']], total: { count: 100_000_000, exact: false }, maxBytes: 1024 }))
      .toBe('i\n1\n… at least 99999999 more rows');
    expect(formatResultTable({ columns: ['i'], rows: [['1']], total: 'uncounted', maxBytes: 1024 }))
      .toBe('i\n1\n… more rows (too many to count in time)');
  });

  test('a huge cell is cut, and so is a first row wider than the budget', () => {
    const text = formatResultTable({ columns: ['a'], rows: [['y'.repeat(10_000)]], total: { count: 1, exact: true }, maxBytes: 16_384 });
    expect(text).toBe(`a\n${'y'.repeat(500)}…\n(1 row)`);
    const wide = formatResultTable({
      columns: Array.from({ length: 200 }, (_, i) => `c${i}`), rows: [Array.from({ length: 200 }, () => 'z'.repeat(400))],
      total: { count: 1, exact: true }, maxBytes: 4096,
    });
    expect(Buffer.byteLength(wide)).toBeLessThan(4200);
  });
});

describe('the source_query description', () => {
  const source = (tableName: string, rowCount: number): DataSource => ({
    id: 'src_1', threadId: 'thr_1', uri: `fixture://data/${tableName}.csv`, integrationId: 'int_1', schemaName: 'ds_thr_1', tableName,
    columns: [{ name: 'region', type: 'text' }, { name: 'amount', type: 'numeric' }], rowCount, bytes: 10, createdAt: '',
  });
  const limits = { defaultRows: 100, maxRows: 1000, maxBytes: 16_384 };

  test('lists each table with its columns, types and row count', () => {
    const text = sourceCatalogue([source('sales', 3), source('costs', 12)], { enabled: true }, limits);
    expect(text).toContain('Data sources of this thread:\n- sales (3 rows, from fixture://data/sales.csv): region (text), amount (numeric)\n- costs (12 rows');
    expect(text).toContain('capped at 100 rows (pass limit for up to 1000) and about 16 KB');
  });

  test('says when there is nothing to query yet, and when the tool is off', () => {
    expect(sourceCatalogue([], { enabled: true }, limits)).toContain('no data sources yet');
    expect(sourceCatalogue([source('sales', 1)], { enabled: false, reason: ROLES_UNAVAILABLE }, limits))
      .toBe(`\n\nThis tool is unavailable here: ${ROLES_UNAVAILABLE}.`);
  });

  test('role names carry the prefix and the thread id, within 63 bytes', () => {
    expect(threadRoleName('thr_0123abc')).toBe('dsq_thr_0123abc');
    expect(Buffer.byteLength(threadRoleName(`thr_${'x'.repeat(100)}`))).toBe(63);
  });
});

describe('the read guard of source_query connections reads the protocol framing', () => {
  const message = (type: string, body: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(type, 0);
    head.writeUInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  };

  test('messages within the bound pass, however the chunks cut them', () => {
    const stream = Buffer.concat([message('D', Buffer.alloc(100)), message('C', Buffer.from('SELECT 1\0')), message('Z', Buffer.from('I'))]);
    for (const size of [1, 2, 3, 5, 7, 64, stream.length]) {
      const watch = messageSizeWatch(200);
      for (let at = 0; at < stream.length; at += size) expect(watch(stream.subarray(at, at + size))).toBeNull();
    }
  });

  test('a message announcing more than the bound is caught from its header, even split across chunks', () => {
    const big = Buffer.alloc(5);
    big.write('E', 0);
    big.writeUInt32BE(540_000_000, 1);
    const stream = Buffer.concat([message('D', Buffer.alloc(10)), big]);
    const watch = messageSizeWatch(1024);
    expect(watch(stream.subarray(0, 17))).toBeNull();
    expect(watch(stream.subarray(17))).toBe(540_000_000);
  });
});
