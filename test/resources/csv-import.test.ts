import { randomUUID } from 'node:crypto';
import { types } from 'node:util';
import { importCsv, threadSchemaName } from '../../sources/csv/import-csv';
import { insertAgent } from '../../store/agents';
import { listDataSources } from '../../store/data-sources';
import { createPool, type Db } from '../../store/pool';
import { insertThread } from '../../store/threads/threads';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';
import { proxyDatabase } from '../support/tcp-proxy';
import { badCsv, goodCsv } from '../fixtures/csv-cases';

describe.each(['embedded', 'external'] as const)('CSV import on the %s PostgreSQL', (kind) => {
  let db: Db;
  let threadId: string;
  const importText = (uri: string, text: string) =>
    importCsv(db, { threadId, uri, integrationId: null, text, bytes: Buffer.byteLength(text) });
  const tablesInSchema = async () => (await db.query<{ t: string }>(
    'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1', [threadSchemaName(threadId)],
  )).rows.map((r) => r.t);

  beforeAll(async () => {
    db = createPool(testStack().databases[kind], logger);
    const agent = await insertAgent(db, { name: `csv-${randomUUID()}`, model: { provider: 'scripted', script: [] } });
    threadId = (await insertThread(db, agent.id)).id;
  });
  afterAll(async () => {
    await db.end();
  });

  test('BOM, quoted newlines and commas, reserved and duplicate headers, empty cells: typed table, NULLs, registry row', async () => {
    const source = await importText('fixture://data/sales.csv', goodCsv.sales);
    expect(source).toMatchObject({ tableName: 'sales', rowCount: 3 });
    expect(source.columns).toEqual([
      { name: 'id', type: 'integer' }, { name: 'select', type: 'text' }, { name: 'order', type: 'text' },
      { name: 'order_2', type: 'text' }, { name: 'user', type: 'text' }, { name: 'amount', type: 'numeric' },
      { name: 'paid', type: 'boolean' }, { name: 'day', type: 'date' }, { name: 'at', type: 'timestamp' }, { name: 'zip', type: 'text' },
    ]);
    const { rows } = await db.query(`SELECT id, "select", "order", amount::text, paid, day::text, zip FROM ${source.schemaName}.sales ORDER BY id`);
    expect(rows).toEqual([
      { id: 1, select: 'Widget, large', order: 'line one\nline two', amount: '19.99', paid: true, day: '2024-01-31', zip: '02134' },
      { id: 2, select: 'say "hi"', order: null, amount: '-3', paid: false, day: '2024-02-29', zip: '10001' },
      { id: 3, select: null, order: null, amount: null, paid: null, day: null, zip: null },
    ]);
  });

  test('names equal after the 63-byte cut, a header-only file, numbers beyond bigint, CRLF with a blank line', async () => {
    const trunc = await importText('fixture://csv/truncation', goodCsv.truncation);
    expect(trunc.columns.map((c) => c.name)).toEqual(['a'.repeat(63), `${'a'.repeat(61)}_2`, 'column_3']);
    const empty = await importText('fixture://csv/header-only', goodCsv.headerOnly);
    expect(empty).toMatchObject({ rowCount: 0, columns: [{ name: 'name', type: 'text' }, { name: 'value', type: 'text' }] });
    const big = await importText('fixture://csv/big-numbers', goodCsv.bigNumbers);
    expect(big.columns.map((c) => c.type)).toEqual(['integer', 'bigint', 'numeric', 'text']);
    const crlf = await importText('fixture://csv/crlf', goodCsv.crlf);
    const { rows } = await db.query(`SELECT a, b FROM ${crlf.schemaName}.${crlf.tableName} ORDER BY a`);
    expect(rows).toEqual([{ a: 1, b: 'x\r\ny' }, { a: 2, b: null }]);
  });

  test('a header named like a system column (xmin, ctid…) is imported under a renamed column', async () => {
    const source = await importText('fixture://csv/system-columns', 'xmin,ctid,tableoid,n\n1,2,3,4\n');
    expect(source.columns.map((c) => c.name)).toEqual(['xmin_2', 'ctid_2', 'tableoid_2', 'n']);
    const { rows } = await db.query(`SELECT xmin_2, ctid_2, tableoid_2, n FROM ${source.schemaName}.${source.tableName}`);
    expect(rows).toEqual([{ xmin_2: 1, ctid_2: 2, tableoid_2: 3, n: 4 }]);
  });

  test('a value PostgreSQL refuses for the inferred type makes that column text, and only that one, on both ways to COPY', async () => {
    for (const [uri, csv] of [['fixture://csv/offset', goodCsv.offsetOverflow], ['fixture://csv/offset-crlf', goodCsv.offsetOverflow.replace(/\n/g, '\r\n')]]) {
      const source = await importText(uri, csv);
      expect(source).toMatchObject({ rowCount: 2, columns: [{ name: 'id', type: 'integer' }, { name: 'at', type: 'text' }, { name: 'seen', type: 'timestamptz' }] });
      const { rows } = await db.query(`SELECT id, at FROM ${source.schemaName}.${source.tableName} ORDER BY id`);
      expect(rows).toEqual([{ id: 1, at: '2024-01-01 00:00:00+01' }, { id: 2, at: '2024-01-01 00:00:00+16' }]);
    }
  });

  test('a file that streams to COPY behind the scan gets the types of the whole file, its refusals and errors too', async () => {
    // Past the first MiB (the part whose types the stream starts with): `late` gets its first values, `n` a text,
    // `at` an offset PostgreSQL refuses; then a ragged row.
    const rows = Array.from({ length: 40_000 }, (_, i) => `${i},,${i},2024-01-01 00:00:00+01,padding padding padding`);
    const tail = ['40000,7,x,2024-01-01 00:00:00+16,end'];
    const csv = `id,late,n,at,pad\n${[...rows, ...tail].join('\n')}\n`;
    expect(csv.indexOf(tail[0])).toBeGreaterThan(1 << 20);
    const source = await importText('fixture://data/outgrown.csv', csv);
    expect(source).toMatchObject({ rowCount: 40_001, columns: [
      { name: 'id', type: 'integer' }, { name: 'late', type: 'integer' }, { name: 'n', type: 'text' }, { name: 'at', type: 'text' }, { name: 'pad', type: 'text' },
    ] });
    const { rows: last } = await db.query(`SELECT late, n, at FROM ${source.schemaName}.${source.tableName} WHERE id = 40000`);
    expect(last).toEqual([{ late: 7, n: 'x', at: '2024-01-01 00:00:00+16' }]);

    const before = await tablesInSchema();
    await expect(importText('fixture://data/ragged-late.csv', `${csv}1,2\n`)).rejects.toThrow(/line 40003 has 2 fields, but the header has 5/);
    expect(await tablesInSchema()).toEqual(before);
  });

  test.each(Object.entries(badCsv))('a CSV that is %s fails naming the line, and leaves nothing behind', async (_name, { csv, error }) => {
    const before = await tablesInSchema();
    const sourcesBefore = (await listDataSources(db, threadId)).length;
    await expect(importText(`fixture://bad/${_name}`, csv)).rejects.toThrow(error);
    expect(await tablesInSchema()).toEqual(before);
    expect(await listDataSources(db, threadId)).toHaveLength(sourcesBefore);
  });

  test('re-importing a URI replaces its table and registry entry atomically, keeping the id', async () => {
    const first = await importText('fixture://data/replace.csv', 'a,b\n1,2\n');
    const second = await importText('fixture://data/replace.csv', 'x\nhello\nworld\n');
    expect(second).toMatchObject({ id: first.id, tableName: first.tableName, rowCount: 2, columns: [{ name: 'x', type: 'text' }] });
    const { rows } = await db.query(`SELECT x FROM ${second.schemaName}.${second.tableName} ORDER BY x`);
    expect(rows).toEqual([{ x: 'hello' }, { x: 'world' }]);
    expect((await tablesInSchema()).filter((t) => t.startsWith('_staging_'))).toEqual([]);
  });

  test('an import killed mid-COPY leaves no table and no registry row, and the next attempt starts from scratch', async () => {
    // The import goes through a proxy that stops forwarding at its first progress (8 MB into COPY):
    // its COPY then waits for data, and is found and killed however fast or loaded the machine is.
    const rows = 1_500_000;
    const csv = `n,label\n${Array.from({ length: rows }, (_, i) => `${i},row number ${i}`).join('\n')}\n`;
    const uri = 'fixture://data/killed.csv';
    const { proxy, url } = await proxyDatabase(testStack().databases[kind]);
    const viaProxy = createPool(url, logger);
    let killed = false;
    const killCopy = async () => {
      try {
        for (let tries = 0; !killed && tries < 2_000; tries++) {
          const { rows: copies } = await db.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE query LIKE 'COPY %_staging_%' AND pid <> pg_backend_pid() AND datname = current_database()");
          for (const r of copies) killed = (await db.query('SELECT pg_terminate_backend($1) AS ok', [r.pid])).rows[0].ok || killed;
          if (!killed) await new Promise((r) => setTimeout(r, 10));
        }
      } finally {
        proxy.release();
      }
    };
    let killing: Promise<void> | undefined;
    try {
      const attempt = importCsv(viaProxy, {
        threadId, uri, integrationId: null, text: csv, bytes: Buffer.byteLength(csv), onProgress: () => {
          if (killing) return;
          proxy.hold();
          killing = killCopy();
        },
      });
      const outcome = await attempt.then(() => 'done', (err: Error) => err);
      await killing;
      expect(killed).toBe(true);
      // The error may come from Node's own socket code, whose Error is not the test realm's: no instanceof.
      expect(outcome).not.toBe('done');
      expect(types.isNativeError(outcome)).toBe(true);
    } finally {
      await viaProxy.end().catch(() => undefined);
      await proxy.close();
    }
    expect((await listDataSources(db, threadId)).some((s) => s.uri === uri)).toBe(false);
    expect((await tablesInSchema()).filter((t) => t.startsWith('_staging_') || t === 'killed')).toEqual([]);

    const again = await importText(uri, csv);
    expect(again).toMatchObject({ tableName: 'killed', rowCount: rows, columns: [{ name: 'n', type: 'integer' }, { name: 'label', type: 'text' }] });
  });
});
