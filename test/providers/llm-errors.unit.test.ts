import { parseRetryAfter } from '../../llm/errors';

describe('an LLM provider\'s Retry-After', () => {
  test('as an HTTP date, and capped at five minutes', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter({ 'Retry-After': 'Tue, 01 Jan 2030 00:00:30 GMT' }, now)).toBe(30_000);
    expect(parseRetryAfter({ 'retry-after': '86400' }, now)).toBe(300_000);
    expect(parseRetryAfter({ 'retry-after': 'soon' }, now)).toBeUndefined();
  });
});
