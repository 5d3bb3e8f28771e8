import { columnNames, sanitiseName, TypeInference, uniqueNames } from '../../sources/csv/columns';
import { CsvRecords, lineOfRecord } from '../../sources/csv/csv-records';
import { tableBaseName, threadSchemaName } from '../../sources/csv/import-csv';
import { LineBuffer } from '../../mcp-client/transports/line-buffer';
import { MESSAGE_TOO_LARGE } from '../../mcp-client/transports/message-bound';
import { resolveResourceUri } from '../../mcp-client/resource-uri';
import { blobBytes, isCsv, looksLikeCsv, textResult, TEXT_RESULT_BYTES } from '../../activities/tools/resource-content';

const infer = (rows: string[][]) => {
  const t = new TypeInference(rows[0].length);
  rows.forEach((r) => t.add(r));
  return t.types();
};

describe('CSV column names', () => {
  test('reserved words and names equal after lower-casing become unique, quoted-safe names', () => {
    expect(columnNames(['select', 'order', 'Order', 'user', 'ORDER'])).toEqual(['select', 'order', 'order_2', 'user', 'order_3']);
  });

  test('names that collide after the 63-byte cut stay unique and within 63 bytes', () => {
    const long = 'é'.repeat(40);
    const names = uniqueNames([`${long}a`, `${long}b`, `${long}c`]);
    expect(new Set(names).size).toBe(3);
    for (const n of names) expect(Buffer.byteLength(n)).toBeLessThanOrEqual(63);
  });

  test('headers named like PostgreSQL system columns are renamed as duplicates are', () => {
    expect(columnNames(['xmin', 'CTID', 'tableoid', 'cmin', 'cmax', 'xmax', 'xmin_2', 'oid'])).toEqual(
      ['xmin_2', 'ctid_2', 'tableoid_2', 'cmin_2', 'cmax_2', 'xmax_2', 'xmin_2_2', 'oid'],
    );
  });

  test('a header that sanitises to nothing gets a positional name', () => {
    expect(columnNames(['  ', '!!', 'ok'])).toEqual(['column_1', 'column_2', 'ok']);
    expect(sanitiseName('Total (EUR)', 'x')).toBe('total_eur');
  });

  test('the table is named after the last path segment of the URI; the schema after the thread', () => {
    expect(tableBaseName('fixture://data/Sales 2024.csv?x=1')).toBe('sales_2024');
    expect(tableBaseName('dataset://sales')).toBe('sales');
    expect(tableBaseName('dataset://')).toBe('data');
    expect(threadSchemaName('thr_ABC')).toBe('ds_thr_abc');
  });
});

describe('CSV type inference', () => {
  test('each column gets the narrowest type all its values fit; empty cells fit any type', () => {
    expect(infer([
      ['1', '3000000000', '1.5', 'true', '2024-02-29', '2024-01-01 10:00', '2024-01-01T10:00:00Z', 'x'],
      ['', '-1', '2', 'FALSE', '', '2024-01-01T10:00:00.123', '', '1'],
    ])).toEqual(['integer', 'bigint', 'numeric', 'boolean', 'date', 'timestamp', 'timestamptz', 'text']);
  });

  test('integers take the narrowest of int4 and int8 up to their exact limits; date and time forms', () => {
    expect(infer([['2147483647', '2147483648', '-2147483648', '-2147483649', '9223372036854775807', '9223372036854775808', '-9223372036854775808']]))
      .toEqual(['integer', 'bigint', 'integer', 'bigint', 'bigint', 'numeric', 'bigint']);
    expect(infer([['1.', '.5', '-1.5e+12', '2024-01-01T10:00:59.123456+05:30', '2024-01-01 10:00+0530', '2000-02-29', '1900-02-29', '2024-01-01 24:00', '2024-01-01 10:00:00.1234567', 'TRUE']]))
      .toEqual(['numeric', 'numeric', 'numeric', 'timestamptz', 'timestamptz', 'date', 'text', 'text', 'text', 'boolean']);
  });

  test('a date or time with a char that is no digit in a digit\'s place, or a field out of range, is text', () => {
    const good = '2024-01-02 10:30:45';
    expect(infer([[good, good.slice(0, 10)]])).toEqual(['timestamp', 'date']);
    for (const k of [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]) {
      // The chars on either side of the digits ('/' and ':'), and a letter.
      for (const c of ['/', ':', 'x']) {
        const bad = `${good.slice(0, k)}${c}${good.slice(k + 1)}`;
        expect([bad, infer([[bad]])[0]]).toEqual([bad, 'text']);
        if (k < 10) expect(infer([[bad.slice(0, 10)]])).toEqual(['text']);
      }
    }
    expect(infer([['2024-13-01', '2024-00-10', '2024-01-00', '2024-01-02 10:60', '2024-01-02 10:30:60', '2024-01-02 10:30:4']]))
      .toEqual(['text', 'text', 'text', 'text', 'text', 'text']);
  });

  test('values PostgreSQL would refuse or change fall back to text', () => {
    expect(infer([['2023-02-29', '007', '1e99999', 'NaN', '', '1'], ['2024-01-01', '7', '1', '1', '', 'yes']]))
      .toEqual(['text', 'text', 'text', 'text', 'text', 'text']);
  });
});

describe('resource URIs', () => {
  const listing = {
    resources: [{ uri: 'fixture://data/sales.csv', name: 'sales.csv', mimeType: 'text/csv' }],
    resourceTemplates: [{ uriTemplate: 'fixture://csv/{case}', name: 'csv-case', mimeType: 'text/csv' }],
  };

  test('parameters fill a template, converted to strings, and the result is known through the template', () => {
    expect(resolveResourceUri('fixture://csv/{case}', { case: 'sales' }, listing)).toMatchObject({ uri: 'fixture://csv/sales', known: true });
    expect(resolveResourceUri('fixture://sized/{bytes}', { bytes: 10 }, listing)).toMatchObject({ uri: 'fixture://sized/10', known: false });
    expect(resolveResourceUri('fixture://data/sales.csv', undefined, listing)).toMatchObject({ known: true, listed: { mimeType: 'text/csv' } });
  });

  test('an unfilled template is refused with the missing names; an unknown URI is still tried', () => {
    expect(() => resolveResourceUri('fixture://csv/{case}', {}, listing)).toThrow('needs parameters: case');
    expect(resolveResourceUri('other://x', undefined, listing)).toEqual({ uri: 'other://x', known: false, listed: undefined });
  });
});

describe('resource contents', () => {
  test('CSV is recognised by mime type, by name, or by sniffing an untyped text', () => {
    expect(isCsv({ uri: 'a://x', mimeType: 'text/csv', text: 'x' })).toBe(true);
    expect(isCsv({ uri: 'a://x.CSV', text: 'x' })).toBe(true);
    expect(isCsv({ uri: 'a://x', text: 'a,b\n1,2\n3,4\n' })).toBe(true);
    expect(isCsv({ uri: 'a://x', mimeType: 'application/json', text: 'a,b\n1,2\n' })).toBe(false);
    expect(looksLikeCsv('Hello, world.\nThis is prose, with commas, many.\n')).toBe(false);
  });

  test('a long text is cut with the contract note; a blob is described, never sent as base64', () => {
    const text = 'é'.repeat(60_000);
    const out = textResult([{ uri: 'a://t', text }]);
    expect(out.endsWith(`\n[truncated: showing ${TEXT_RESULT_BYTES} of 120000 bytes]`)).toBe(true);
    const blob = Buffer.alloc(3000).toString('base64');
    expect(blobBytes(blob)).toBe(3000);
    expect(textResult([{ uri: 'a://i', mimeType: 'image/png', blob }])).toBe('[binary resource a://i: image/png, 3000 bytes; its content is not shown]');
  });
});

describe('the stdio line buffer', () => {
  const errors: Error[] = [];
  const onBad = (e: Error) => errors.push(e);

  test('messages split across chunks are joined once, several per chunk are all delivered', () => {
    const buf = new LineBuffer(1000);
    expect(buf.push(Buffer.from('{"jsonrpc":"2.0","id":1,"res'), onBad)).toEqual([]);
    const out = buf.push(Buffer.from('ult":{}}\n{"jsonrpc":"2.0","id":2,"result":{}}\n'), onBad);
    expect(out.map((m) => (m as { id: number }).id)).toEqual([1, 2]);
  });

  test('an over-long response is dropped and answered with an error for its id, and the next message still arrives', () => {
    const buf = new LineBuffer(100);
    const big = `{"result":{"contents":[{"text":"${'x'.repeat(500)}"}]},"jsonrpc":"2.0","id":7}\n`;
    const out = [...buf.push(Buffer.from(big.slice(0, 300)), onBad), ...buf.push(Buffer.from(`${big.slice(300)}{"jsonrpc":"2.0","id":8,"result":{}}\n`), onBad)];
    expect(out[0]).toMatchObject({ id: 7, error: { code: MESSAGE_TOO_LARGE } });
    expect(out[1]).toMatchObject({ id: 8, result: {} });
  });
});

describe('the CSV reader', () => {
  const read = (text: string) => {
    const records = new CsvRecords(text, 8);
    const out: { line: number; values: string[] }[] = [];
    while (records.next()) out.push({ line: records.recordLine, values: Array.from({ length: records.count }, (_, k) => records.value(k)) });
    return out;
  };

  test('records carry their file line; quoted newlines, CRLF, lone CR and blank lines count; doubled quotes are one', () => {
    expect(read('\uFEFFa,b\r\n"x\r\ny",""""\r\n\r\n1,\r2,3')).toEqual([
      { line: 1, values: ['a', 'b'] }, { line: 2, values: ['x\r\ny', '"'] }, { line: 5, values: ['1', ''] }, { line: 6, values: ['2', '3'] },
    ]);
    expect(lineOfRecord('a\n"1\n2"\n\n3\n', 2)).toBe(5);
  });

  test('a stray quote fails naming its line', () => {
    expect(() => read('a,b\n1,x"y\n')).toThrow(/line 2 has a quote inside an unquoted field \(field 2\)/);
    expect(() => read('a,b\n\n"x"y,1\n')).toThrow(/line 3 has text after the closing quote of field 1/);
  });
});
