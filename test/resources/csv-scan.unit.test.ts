import { TypeInference } from '../../sources/csv/columns';
import { CsvScan } from '../../sources/csv/scan-csv';

/** The type inferred for one column holding these values, one per row. */
const typeOf = (...values: string[]) => {
  const inference = new TypeInference(1);
  for (const value of values) inference.add([value]);
  return inference.types()[0];
};

async function scanned(text: string) {
  const scan = new CsvScan(text);
  await scan.finish();
  return scan;
}

describe('CSV type inference, value by value', () => {
  test.each([
    ['+5', 'integer'], ['-0', 'integer'], ['0', 'integer'], ['0.5', 'numeric'], ['5.', 'numeric'], ['+.5', 'numeric'],
    ['-.5e-3', 'numeric'], ['1E+3', 'numeric'], ['1e999', 'numeric'],
    ['True', 'boolean'], ['fAlSe', 'boolean'],
    ['2024-01-01T23:59:59.999999', 'timestamp'], ['2024-01-01 10:00-08', 'timestamptz'],
  ])('%s is read as %s', (value, type) => {
    expect(typeOf(value)).toBe(type);
  });

  test.each([
    // numbers PostgreSQL would refuse, or that are identifiers rather than quantities
    '00', '-007', '+', '-', '.', '1e', '1e1000', '1,000', ' 1', '1 ',
    // booleans PostgreSQL reads but that are as likely words or codes in a CSV
    't', 'yes', 'tru', 'truex',
    // dates and times that are not real, or not in the one form inferred
    '2024-13-01', '2024-04-31', '2024-1-01', '2024-01-01T', '2024-01-01T10:0', '2024-01-01T10:00:60', '2024-01-01T10:00+5',
  ])('%s keeps its column as text', (value) => {
    expect(typeOf(value)).toBe('text');
  });
});

describe('CSV type inference across rows', () => {
  test('a column widens as far as its values need: integer, then bigint, then numeric', () => {
    expect(typeOf('1', '2')).toBe('integer');
    expect(typeOf('1', '3000000000')).toBe('bigint');
    expect(typeOf('1', '3000000000', '1.5')).toBe('numeric');
  });

  test('values of different families make the column text, and a text column stays text', () => {
    expect(typeOf('1', '2024-01-01')).toBe('text');
    expect(typeOf('true', '1')).toBe('text');
    expect(typeOf('2024-01-01 10:00', '2024-01-01 10:00Z')).toBe('text');
    expect(typeOf('x', '1', '2')).toBe('text');
  });

  test('a column with no values at all is text; a short record leaves its missing cells empty', () => {
    expect(typeOf('', '')).toBe('text');
    const inference = new TypeInference(2);
    inference.add(['1', '2']);
    inference.add(['3']);
    expect(inference.types()).toEqual(['integer', 'integer']);
  });
});

describe('the CSV scan', () => {
  test('names the columns from the header and types them from every row; a quoted number is still a number', async () => {
    const scan = await scanned('\uFEFFid,Name,"Amount (EUR)",day,note\n1,a,"1.50",2024-01-01,"say ""hi"""\n2,"b, c",,2024-01-02,"7"\n');
    expect(scan.columns()).toEqual([
      { name: 'id', type: 'integer' }, { name: 'name', type: 'text' }, { name: 'amount_eur', type: 'numeric' },
      { name: 'day', type: 'date' }, { name: 'note', type: 'text' },
    ]);
    expect(scan.rowCount).toBe(2);
  });

  test('scanned in slices, the types are those of the rows scanned so far', async () => {
    const scan = new CsvScan('a,b\n1,x\n2,y\nz,3\n');
    scan.scanTo(scan.dataStart + 1);
    expect({ types: scan.types(), rows: scan.rowCount, done: scan.done }).toEqual({ types: ['integer', 'text'], rows: 1, done: false });
    await scan.finish();
    expect({ types: scan.types(), rows: scan.rowCount, done: scan.done }).toEqual({ types: ['text', 'text'], rows: 3, done: true });
  });

  test('a text PostgreSQL\'s CSV reader would read differently does not go to COPY as it is', async () => {
    expect(await scanned('a\n1\n')).toMatchObject({ streamable: true, verbatim: true });
    for (const text of ['a\r\n1\r\n', 'a\n1\n\n2\n', 'a\n1\n\\.\n2\n']) {
      expect(await scanned(text)).toMatchObject({ streamable: false, verbatim: false });
    }
  });

  test.each([
    ['an empty file', '', 'invalid CSV: the file is empty (no header row)'],
    ['a file of a BOM and blanks', '\uFEFF  \n', 'invalid CSV: the file is empty (no header row)'],
    ['a short record', 'a,b\n1\n', 'invalid CSV: line 2 has 1 fields, but the header has 2'],
    ['a long record after a blank line', 'a,b\n1,2\n\n3,4,5\n', 'invalid CSV: line 4 has 3 fields, but the header has 2'],
    ['a NUL byte', 'a\n1\n2\u0000\n', 'invalid CSV: a NUL byte on line 3 (PostgreSQL text cannot hold it)'],
    ['1,601 columns', `${Array.from({ length: 1601 }, (_, i) => `c${i}`).join(',')}\n`, 'invalid CSV: line 1 has 1601 columns; PostgreSQL allows at most 1600'],
  ])('%s is refused, saying why', async (_what, text, message) => {
    await expect(scanned(text)).rejects.toThrow(message);
  });
});
