import { APICallError } from 'ai';
import { classifyLlmError, LlmAnswerTooLarge, parseRetryAfter } from '../../llm/errors';

describe('an LLM answer past the worker\'s bounds', () => {
  test('fails the turn without a retry, as it came or inside the SDK\'s error', () => {
    const tooLarge = new LlmAnswerTooLarge('The model\'s answer exceeded its bound: more than 1024 bytes of text (LLM_MAX_TEXT_BYTES)');
    const wrapped = new APICallError({ message: 'Failed to process successful response', cause: tooLarge, url: 'http://x', requestBodyValues: {}, statusCode: 200 });
    for (const err of [tooLarge, wrapped]) {
      expect(classifyLlmError(err)).toEqual({ type: 'LlmAnswerTooLarge', message: tooLarge.message, retryable: false });
    }
  });
});

describe('an LLM provider\'s Retry-After', () => {
  test('is read as seconds or as an HTTP date, capped at five minutes; a date gone by is now; anything else is ignored', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter({ 'retry-after': '7' }, now)).toBe(7_000);
    expect(parseRetryAfter({ 'Retry-After': 'Tue, 01 Jan 2030 00:00:30 GMT' }, now)).toBe(30_000);
    expect(parseRetryAfter({ 'retry-after': 'Mon, 31 Dec 2029 23:00:00 GMT' }, now)).toBe(0);
    expect(parseRetryAfter({ 'retry-after': '86400' }, now)).toBe(300_000);
    expect(parseRetryAfter({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  test('OpenAI\'s retry-after-ms comes first, and is rounded up to whole milliseconds', () => {
    expect(parseRetryAfter({ 'retry-after-ms': '1500.2', 'retry-after': '60' })).toBe(1501);
    expect(parseRetryAfter({ 'Retry-After-Ms': 'later', 'retry-after': '2' })).toBe(2_000);
  });
});
