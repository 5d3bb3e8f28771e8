import { findUnacceptable, storableJson, storableText, unstorableReason } from '../../core/db/storable-text';

describe('text PostgreSQL can store', () => {
  test('NUL and lone surrogates become U+FFFD; a surrogate pair (an emoji) is kept', () => {
    expect(storableText('a\u0000b\ud800c\udc00d\ud83d\ude00')).toBe('a\ufffdb\ufffdc\ufffdd\ud83d\ude00');
    expect(storableText(null)).toBeNull();
    expect(unstorableReason('plain ✓ \ud83d\ude00')).toBeUndefined();
    expect(unstorableReason('x\ud800')).toMatch(/unpaired UTF-16 surrogate/);
  });

  test('every string and key of a JSON value, at any depth, and nothing else', () => {
    const value = { 'k\u0000': ['\u0000', { deep: 'x\udfff' }, 1, true, null] };
    expect(storableJson(value)).toEqual({ 'k\ufffd': ['\ufffd', { deep: 'x\ufffd' }, 1, true, null] });
    expect(JSON.stringify(storableJson(value))).not.toMatch(/\\u0000|\\ud[89a-f]/);
  });

  test('findUnacceptable names the first bad field, or the depth past the limit', () => {
    expect(findUnacceptable({ a: [{ b: 'ok' }, { c: 'no\u0000' }] }, 'body')).toBe('body.a[1].c contains a NUL character (\\u0000), which cannot be stored');
    expect(findUnacceptable({ 'odd key': { x: '\ud800' } }, 'body')).toMatch(/^body\["odd key"\]\.x contains an unpaired/);
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100; i++) deep = { n: deep };
    expect(findUnacceptable(deep, 'body')).toBe('body.n.n.n.n.n.n.n.n.n.n.n.n… is nested deeper than 64 levels');
    expect(findUnacceptable({ fine: [[[1]]] }, 'body')).toBeUndefined();
  });
});
