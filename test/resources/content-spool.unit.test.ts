import fs from 'node:fs';
import { LineBuffer } from '../../mcp-client/transports/line-buffer';
import { CONTENT_NOT_KEPT, MESSAGE_TOO_LARGE } from '../../mcp-client/transports/message-bound';
import { claimSpooled, releaseSpooled } from '../../mcp-client/large-content/spool-files';
import { SpoolingMessage } from '../../mcp-client/large-content/spooling-message';
import { ourSpoolFiles } from '../support/spool-files';

/** What the engine held before spooling: the message decoded as text, parsed, the text as UTF-8. */
const parsedBytes = (message: Buffer, field: 'text' | 'blob') => {
  const value = (JSON.parse(message.toString('utf8')) as { result: { contents: Record<string, string>[] } }).result.contents[0][field];
  return field === 'text' ? Buffer.from(value) : Buffer.from(value, 'base64');
};

const message = (field: 'text' | 'blob', raw: Buffer) => Buffer.concat([
  Buffer.from(`{"result":{"contents":[{"uri":"x://a","mimeType":"text/plain","${field}":"`), raw, Buffer.from('"}]},"jsonrpc":"2.0","id":5}'),
]);

/** The message through a spooling reader in the given pieces: the content read back from its spool file, and the message kept. */
function spooled(pieces: Buffer[], field: 'text' | 'blob' = 'text', threshold = 0): { content: Buffer | undefined; kept: Record<string, unknown> } {
  const reader = new SpoolingMessage(1 << 30, threshold);
  for (const piece of pieces) reader.push(piece);
  const kept = JSON.parse(reader.take().toString('utf8')) as { result: { contents: Record<string, string>[] } };
  const spool = claimSpooled(kept.result.contents[0][field]);
  if (!spool) return { content: undefined, kept };
  const content = fs.readFileSync(spool.path);
  expect(spool.bytes).toBe(content.length);
  fs.rmSync(spool.path);
  return { content, kept };
}

const spoolFiles = ourSpoolFiles;

/** JSON string contents (raw bytes between the quotes): every escape, pairs, lone halves, raw UTF-8, bytes that are not UTF-8. */
const strings: Buffer[] = [
  'plain, \\"ascii\\" text\\n', '\\" \\\\ \\/ \\b \\f \\n \\r \\t', '\\u0041\\u00e9\\u20AC\\u0000\\u001f', '\\ud83d\\ude00 pair',
  'lone high \\ud83d then text', 'lone high at the end \\uD83D', '\\ude00 lone low', '\\ud83d\\ud83d\\ude00 high, pair',
  '\\ud83d\\n high then escape', 'raw é€😀 and \\u00e9', 'mixed 😀\\ud83d\\ude00é',
].map((s) => Buffer.from(s)).concat([
  Buffer.from([0x61, 0xff, 0x62, 0xe2, 0x82, 0x5c, 0x6e, 0xf0, 0x9f, 0x98, 0x63]), // bytes that are not UTF-8, one cut by an escape
  Buffer.from([0xe2, 0x82, 0xac, 0xc3, 0xa9, 0xc3]), // a lead byte at the very end
]);

describe('the content scanner of a resources/read answer', () => {
  test.each(strings.map((s, i) => [i, s] as const))('string %i, cut at every byte, spools exactly what JSON.parse makes of it', (_, raw) => {
    const whole = message('text', raw);
    const expected = parsedBytes(whole, 'text');
    for (let cut = 0; cut <= whole.length; cut++) {
      const { content, kept } = spooled([whole.subarray(0, cut), whole.subarray(cut)]);
      expect(content).toEqual(expected);
      expect(kept).toMatchObject({ id: 5, result: { contents: [{ uri: 'x://a', mimeType: 'text/plain' }] } });
    }
    // and byte by byte
    expect(spooled([...whole].map((b) => Buffer.from([b]))).content).toEqual(expected);
  });

  test('a text across many blocks keeps characters split at block edges whole', () => {
    const raw = Buffer.from(`${'é'.repeat(700_000)}😀\\ud83d\\ude00${'€'.repeat(400_000)}\\n${'a😀'.repeat(200_000)}`);
    const whole = message('text', raw);
    const pieces: Buffer[] = [];
    for (let i = 0; i < whole.length; i += 65_537) pieces.push(whole.subarray(i, i + 65_537));
    // Compared as buffers: jest's deep equality of a few MB takes seconds.
    expect(spooled(pieces).content!.equals(parsedBytes(whole, 'text'))).toBe(true);
  });

  test('under the threshold the message is passed on as it came', () => {
    const whole = message('text', strings[1]);
    const { content, kept } = spooled([whole], 'text', 1024);
    expect(content).toBeUndefined();
    expect(kept).toEqual(JSON.parse(whole.toString('utf8')));
  });

  test('a blob is decoded as it arrives, escaped slashes and whitespace too; a blob atob refuses stays refused', () => {
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 256));
    const b64 = bytes.toString('base64');
    const escaped = Buffer.from(`${b64.slice(0, 100).replace(/\//g, '\\/')}\\n ${b64.slice(100)}`);
    for (const cut of [1, 2, 3, 50, 101, 102, 103]) {
      const whole = message('blob', escaped);
      expect(spooled([whole.subarray(0, cut + 60), whole.subarray(cut + 60)], 'blob').content).toEqual(bytes);
    }
    const odd = spooled([message('blob', Buffer.from(`${b64}A`))], 'blob');
    expect(odd.content).toBeUndefined();
    expect(odd.kept).toMatchObject({ result: { contents: [{ blob: '!' }] } });
  });

  test('a bad escape or a raw control character makes the message unreadable, as JSON.parse would, and leaves no file', () => {
    for (const raw of ['ok \\x', 'ok \u0001 no', 'ok \\u12G4']) {
      const errors: Error[] = [];
      const buf = new LineBuffer(8 << 20, 8 << 20);
      const out = buf.push(Buffer.concat([message('text', Buffer.from(`${'y'.repeat(2 << 20)}${raw}`)), Buffer.from('\n')]), (e) => errors.push(e));
      expect(out).toEqual([]);
      expect(errors).toHaveLength(1);
    }
    expect(spoolFiles()).toEqual([]);
  });

  test('a bad escape cut from the valid rest of its string by a chunk edge still makes the message unreadable', () => {
    for (const raw of ['ok \\x', 'ok \u0001', 'ok \\u12G4']) {
      const errors: Error[] = [];
      const buf = new LineBuffer(8 << 20, 8 << 20);
      const head = Buffer.from(`{"result":{"contents":[{"uri":"x://a","text":"${'y'.repeat(2 << 20)}${raw}`);
      const out = [...buf.push(head, (e) => errors.push(e)), ...buf.push(Buffer.from(' tail"}]},"jsonrpc":"2.0","id":5}\n'), (e) => errors.push(e))];
      expect(out).toEqual([]);
      expect(errors).toHaveLength(1);
    }
    expect(spoolFiles()).toEqual([]);
  });

  test('nesting deeper than the scan follows leaves the message to JSON.parse, whole and unchanged', () => {
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const whole = Buffer.from(`{"deep":${deep},"result":{"contents":[{"uri":"x://a","text":"${'w'.repeat(2 << 20)}"}]},"jsonrpc":"2.0","id":5}`);
    const { content, kept } = spooled([whole]);
    expect(content).toBeUndefined();
    expect(kept).toEqual(JSON.parse(whole.toString('utf8')));
  });

  test('contents past the resource bound answer the request with the too-large error and leave no file', () => {
    const buf = new LineBuffer(8 << 20, 2 << 20);
    const big = message('text', Buffer.from('z'.repeat(3 << 20)));
    const out = buf.push(Buffer.concat([big, Buffer.from('\n{"jsonrpc":"2.0","id":6,"result":{}}\n')]), () => undefined);
    expect(out[0]).toMatchObject({ id: 5, error: { code: MESSAGE_TOO_LARGE } });
    expect(out[1]).toMatchObject({ id: 6 });
    expect(spoolFiles()).toEqual([]);
  });

  test('a spool file that cannot be written (no room on the disk) answers the request with an error; the worker goes on', () => {
    const full = jest.spyOn(fs, 'writeSync').mockImplementationOnce(() => {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    try {
      const buf = new LineBuffer(8 << 20, 8 << 20);
      const out = buf.push(Buffer.concat([message('text', Buffer.from('n'.repeat(3 << 20))), Buffer.from('\n{"jsonrpc":"2.0","id":6,"result":{}}\n')]), () => undefined);
      expect(out[0]).toMatchObject({ id: 5, error: { code: CONTENT_NOT_KEPT, message: expect.stringContaining('ENOSPC') } });
      expect(out[1]).toMatchObject({ id: 6 });
    } finally {
      full.mockRestore();
    }
    expect(spoolFiles()).toEqual([]);
  });

  test('over stdio lines, a large text arrives as a token the resource activity claims; a forged token claims nothing', async () => {
    const buf = new LineBuffer(8 << 20, 8 << 20);
    const [answer] = buf.push(Buffer.concat([message('text', Buffer.from('q'.repeat(3 << 20))), Buffer.from('\n')]), () => undefined);
    const text = (answer as unknown as { result: { contents: { text: string }[] } }).result.contents[0].text;
    expect(claimSpooled('spool000000000000000000000000000')).toBeUndefined();
    const spool = claimSpooled(text)!;
    expect(spool.bytes).toBe(3 << 20);
    expect(claimSpooled(text)).toBeUndefined();
    await releaseSpooled(spool);
    expect(spoolFiles()).toEqual([]);
  });
});
