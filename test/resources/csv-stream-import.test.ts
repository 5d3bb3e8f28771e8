import { randomUUID } from 'node:crypto';
import { importCsv, threadSchemaName } from '../../sources/csv/import-csv';
import { csvTypes, importCsvStream, lastRecordEnd } from '../../sources/csv/stream-import';
import { insertAgent } from '../../store/agents';
import { listDataSources, type DataSource } from '../../store/data-sources';
import { createPool, type Db } from '../../store/pool';
import { insertThread } from '../../store/threads/threads';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';
import { badCsv, goodCsv } from '../fixtures/csv-cases';
import { bigCsv } from '../fixtures/resource-fixtures';

/*
 * A CSV imported as it arrives gives the table importCsv gives of the whole text, or nothing at all
 * (undefined: the caller imports the whole text), never a table of its own making.
 */

async function* piecesOf(text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** Quoted newlines, doubled quotes, multi-byte characters cut across pieces, empty cells. */
function mixedCsv(rows: number): string {
  const lines = ['id,name,"note, quoted",amount,day,flag'];
  for (let i = 1; i <= rows; i++) {
    lines.push(`${i},é€😀 ${i},"line one ${i}\nline ""two""",${i % 7 === 0 ? '' : (i % 100) / 4},2024-02-${String((i % 28) + 1).padStart(2, '0')},${i % 2 === 0}`);
  }
  return `${lines.join('\n')}\n`;
}

/** ASCII but for a row now and then: pieces of ASCII alone go as they are, the others through UTF-8's decoder. */
function sparseCsv(rows: number): string {
  const lines = ['id,name,note'];
  for (let i = 1; i <= rows; i++) lines.push(`${i},${i % 50 === 0 ? `Zoë 😀 ${i}` : `name ${i}`},"a, ""b"" ${i}"`);
  return `${lines.join('\n')}\n`;
}

/** Records whose quoted field spans many pieces, with line feeds and doubled quotes in it. */
function longRecordCsv(): string {
  const long = (n: number) => `"${Array.from({ length: n }, (_, k) => `part ${k} ""q""\nnext`).join(',')}"`;
  return `id,body\n1,short\n2,${long(2_000)}\n3,${long(50)}\n4,"end"\n`;
}

describe('a CSV imported as it arrives', () => {
  let db: Db;
  let threadId: string;
  const confirmed = () => Promise.resolve(true);
  const stream = (uri: string, text: string, { size = 7, guessChars = 64, confirm = confirmed } = {}) =>
    importCsvStream(db, { threadId, uri, integrationId: null, guessChars, confirm }, piecesOf(text, size));
  const rowsOf = async (s: DataSource) => (await db.query(`SELECT * FROM "${s.schemaName}"."${s.tableName}" ORDER BY 1`)).rows;
  const tablesInSchema = async () => (await db.query<{ t: string }>(
    'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1', [threadSchemaName(threadId)],
  )).rows.map((r) => r.t);

  /** The table of the whole text (importCsv), read back, then dropped from the registry's view by a new thread. */
  async function wholeImport(uri: string, text: string) {
    const source = await importCsv(db, { threadId, uri, integrationId: null, text, bytes: Buffer.byteLength(text) });
    return { columns: source.columns, rowCount: source.rowCount, bytes: source.bytes, rows: await rowsOf(source) };
  }

  beforeEach(async () => {
    const agent = await insertAgent(db, { name: `csv-stream-${randomUUID()}`, model: { provider: 'scripted', script: [] } });
    threadId = (await insertThread(db, agent.id)).id;
  });
  beforeAll(() => {
    db = createPool(testStack().databases.external, logger);
  });
  afterAll(async () => {
    await db.end();
  });

  test('the last record of a text ends after its last line feed outside quotes', () => {
    expect(lastRecordEnd('a,b\n1,2\n3,')).toBe(8);
    expect(lastRecordEnd('a,b\n1,"x\ny"\n3,"open\n')).toBe(12);
    expect(lastRecordEnd('1,"x\ny')).toBe(0);
    expect(lastRecordEnd('no feed')).toBe(0);
    expect(lastRecordEnd('1,"a""\nb"\n')).toBe(10);
  });

  test.each([
    ['mixed, in 7-byte pieces', mixedCsv(500), 7, 64],
    ['mixed, in 1-byte pieces', mixedCsv(40), 1, 16],
    ['mixed, in 4 KiB pieces with a 1 MiB guess', mixedCsv(20_000), 4096, 1 << 20],
    ['BOM, reserved and duplicate headers', goodCsv.sales, 5, 1 << 20],
    ['header alone', goodCsv.headerOnly, 3, 64],
    ['big numbers', goodCsv.bigNumbers, 2, 1 << 20],
    ['mostly ASCII, a multi-byte row now and then, in 997-byte pieces', sparseCsv(5_000), 997, 1024],
    ['a record longer than a hundred pieces', longRecordCsv(), 256, 16],
  ])('%s: the same table as the whole import', async (_, text, size, guessChars) => {
    const source = await stream('fixture://data/streamed.csv', text, { size, guessChars });
    expect(source).toBeDefined();
    const streamed = { columns: source!.columns, rowCount: source!.rowCount, bytes: source!.bytes, rows: await rowsOf(source!) };
    expect(streamed.bytes).toBe(Buffer.byteLength(text));
    expect(streamed).toEqual(await wholeImport('fixture://data/whole.csv', text));
    expect(await tablesInSchema()).toEqual(['streamed', 'whole']);
  });

  test.each([
    ['a type that widens after the guess', bigCsv(3_000)],
    ['carriage returns and a blank line', goodCsv.crlf],
    ['a value PostgreSQL refuses for its inferred type', goodCsv.offsetOverflow],
    ...Object.entries(badCsv).map(([name, { csv }]) => [`bad CSV: ${name}`, csv]),
  ])('%s: nothing is loaded, and the whole import is left to do it', async (_, text) => {
    const guessChars = text === goodCsv.offsetOverflow ? 1 << 20 : 1024;
    expect(await stream('fixture://data/streamed.csv', text, { size: 100, guessChars })).toBeUndefined();
    expect(await tablesInSchema()).toEqual([]);
    expect(await listDataSources(db, threadId)).toEqual([]);
  });

  test('a type that widens after the guess: nothing is loaded, and once the rest is read the types of the whole text are told', async () => {
    const told: unknown[] = [];
    const streamed = (text: string) => importCsvStream(db, {
      threadId, uri: 'fixture://data/streamed.csv', integrationId: null, guessChars: 1024, confirm: confirmed, onWidened: (types) => told.push(types),
    }, piecesOf(text, 100));
    const text = bigCsv(3_000);
    expect(await streamed(text)).toBeUndefined();
    const whole = await wholeImport('fixture://data/whole.csv', text);
    expect(whole.columns.find((c) => c.name === 'amount')?.type).toBe('numeric');
    expect(told).toEqual([whole.columns.map((c) => c.type)]);
    expect(await tablesInSchema()).toEqual(['whole']);
    // Rolled back for another reason than a type: nothing is told.
    expect(await streamed(goodCsv.crlf)).toBeUndefined();
    expect(await streamed(`${text}1,2\n`)).toBeUndefined();
    expect(told).toHaveLength(1);
  });

  test('a load its caller does not confirm (the spool was not its request\'s) leaves nothing behind', async () => {
    let asked = 0;
    const confirm = () => {
      asked++;
      return Promise.resolve(false);
    };
    expect(await stream('fixture://data/streamed.csv', mixedCsv(300), { confirm })).toBeUndefined();
    expect(asked).toBe(1);
    expect(await tablesInSchema()).toEqual([]);
    expect(await listDataSources(db, threadId)).toEqual([]);
  });

  test('a cancel during the load rolls it back and is thrown, not taken for CSV that cannot stream', async () => {
    const controller = new AbortController();
    async function* slow(): AsyncGenerator<Buffer> {
      yield* piecesOf(mixedCsv(200), 500);
      controller.abort(new Error('cancelled'));
      yield Buffer.from('');
    }
    await expect(importCsvStream(db, { threadId, uri: 'fixture://data/cut.csv', integrationId: null, guessChars: 64, confirm: confirmed, signal: controller.signal }, slow()))
      .rejects.toThrow('cancelled');
    expect(await tablesInSchema()).toEqual([]);
  });

  test.each([
    ['a type that widens after the guess', bigCsv(3_000), 1024],
    ['mixed, in 7-byte pieces', mixedCsv(500), 7],
  ])('%s: the types of the whole, then the rows, each read as it comes, make the same table as the whole import', async (_, text, size) => {
    const types = await csvTypes(piecesOf(text, size));
    expect(types).toEqual((await wholeImport('fixture://data/whole.csv', text)).columns.map((c) => c.type));
    const source = await importCsvStream(db, { threadId, uri: 'fixture://data/streamed.csv', integrationId: null, guessChars: 64, types, confirm: confirmed }, piecesOf(text, size));
    expect(source).toBeDefined();
    const whole = (await listDataSources(db, threadId)).find((s) => s.tableName === 'whole')!;
    expect({ columns: source!.columns, rowCount: source!.rowCount, rows: await rowsOf(source!) })
      .toEqual({ columns: whole.columns, rowCount: whole.rowCount, rows: await rowsOf(whole) });
  });

  test.each([
    ['carriage returns and a blank line', goodCsv.crlf],
    // A row too big for PostgreSQL is the scan's to pass: PostgreSQL refuses it, and the whole import names its line.
    ...Object.entries(badCsv).filter(([name]) => name !== 'tooBigAfterNewline').map(([name, { csv }]) => [`bad CSV: ${name}`, csv]),
  ])('%s: no types of the whole as it comes', async (_, text) => {
    expect(await csvTypes(piecesOf(text, 100))).toBeUndefined();
  });
});
