import { canonicalJson } from '../../core/canonical-json';

describe('canonical JSON', () => {
  test('object keys are sorted at every depth, with no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
  });

  test('the same value with its keys in another order gives the same text; another value does not', () => {
    const a = { sql: 'SELECT 1', limit: 5, options: { strict: true, mode: 'x' } };
    const b = { options: { mode: 'x', strict: true }, limit: 5, sql: 'SELECT 1' };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson({ ...a, limit: 6 })).not.toBe(canonicalJson(b));
    expect(canonicalJson({ ...a, extra: null })).not.toBe(canonicalJson(b));
  });

  test('integer-like keys sort as strings, not as JavaScript orders them', () => {
    expect(canonicalJson({ b: 1, 10: 2, 2: 3 })).toBe('{"10":2,"2":3,"b":1}');
  });

  test('array order matters', () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  test('what JSON has no value for is left out of objects, null in arrays; strings are escaped as JSON escapes them', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, Number.NaN], 'k"ey': 'line\nbreak' })).toBe('{"b":[null,null],"k\\"ey":"line\\nbreak"}');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson('é')).toBe('"é"');
  });
});
