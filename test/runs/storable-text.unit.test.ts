import { findUnacceptable, storableJson, storableJsonValue, storableText, unstorableReason } from '../../store/storable-text';

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

  test('storable JSON text is JSON.stringify\'s, the value itself kept, unless a NUL or a lone surrogate is in it', () => {
    const clean = { text: 'plain ✓ \ud83d\ude00', quoted: 'a "\\u0041"', n: [1, null] };
    const kept = storableJsonValue(clean);
    expect(kept).toEqual({ text: JSON.stringify(clean), value: clean });
    expect(kept.value).toBe(clean);

    for (const odd of [{ 'k\u0000': 'v' }, { v: ['x\ud800'] }, { v: 'x\udfff' }, { v: 'x\udbff\u0000' }]) {
      const { text, value } = storableJsonValue(odd);
      expect(value).toEqual(storableJson(odd));
      expect(JSON.parse(text)).toEqual(value);
      expect(text).not.toMatch(/\\u0000|\\ud[89a-f]/);
    }
    // Six characters that look like an escape are text like any other (found, walked, and kept).
    const lookalike = { v: 'literally \\u0000 and \\udc00' };
    expect(storableJsonValue(lookalike)).toEqual({ text: JSON.stringify(lookalike), value: lookalike });
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
