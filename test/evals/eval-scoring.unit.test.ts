import { replayGroups } from '../../core/eval';
import { failedExpectations, toolCallChanges, type ScoredRun } from '../../core/eval-scoring';
import { createEvalBody } from '../../core/eval-view';
import { searchBounded } from '../../platform/bounded-pattern';

const answered = (over: Partial<ScoredRun> = {}): ScoredRun => ({
  status: 'completed', stopReason: 'answer', output: 'The count is 3.', turns: 2,
  toolCalls: [{ name: 'fx__count', arguments: '{"text": "a b c"}' }], ...over,
});

describe('scoring a replay against its expectation', () => {
  test('a replay that does all that is expected passes', () => {
    expect(failedExpectations({
      outputContains: ['count', '3'], toolsCalled: ['fx__count'], toolsNotCalled: ['fx__echo'], maxTurns: 2, stopReason: 'answer',
    }, answered(), undefined)).toEqual([]);
  });

  test('each failed expectation is named with what failed', () => {
    const replay = answered({ toolCalls: [{ name: 'fx__echo' }], turns: 5, stopReason: 'max_turns', output: 'no idea' });
    expect(failedExpectations({
      outputContains: 'count', outputMatches: '\\d+', toolsCalled: ['fx__count'], toolsNotCalled: ['fx__echo'], maxTurns: 3,
      stopReason: 'answer',
    }, replay, 'not_matched')).toEqual([
      'stopReason: answer (stopped: max_turns)', 'outputContains: "count"', 'outputMatches: /\\d+/', 'toolsCalled: fx__count',
      'toolsNotCalled: fx__echo', 'maxTurns: 3 (took 5)',
    ]);
  });

  test('a replay that did not complete fails unless its stop was expected', () => {
    const failed = answered({ status: 'failed', stopReason: 'error', output: null });
    expect(failedExpectations({}, failed)).toEqual(['status: failed']);
    expect(failedExpectations({ stopReason: 'error' }, failed)).toEqual([]);
  });

  test('a search that ran out of time fails outputMatches, saying so', () => {
    expect(failedExpectations({ outputMatches: '(a+)+$' }, answered(), 'timed_out')).toEqual(['outputMatches: /(a+)+$/ (timed out)']);
    expect(failedExpectations({ outputMatches: 'count' }, answered(), 'matched')).toEqual([]);
  });
});

describe('how the replay\'s tool calls differ from the original\'s', () => {
  test('alike calls cancel out, key order aside; the rest are added, removed or changed', () => {
    const original = [
      { name: 'fx__count', arguments: '{"a": 1, "b": 2}' }, { name: 'fx__echo', arguments: '{"text": "hi"}' },
      { name: 'fx__add', arguments: '{"x": 1}' },
    ];
    const replay = [{ name: 'fx__count', arguments: '{"b":2,"a":1}' }, { name: 'fx__add', arguments: '{"x": 2}' }, { name: 'fx__time' }];
    expect(toolCallChanges(original, replay)).toEqual({
      added: [{ name: 'fx__time' }],
      removed: [{ name: 'fx__echo', arguments: '{"text": "hi"}' }],
      changed: [{ name: 'fx__add', from: '{"x": 1}', to: '{"x": 2}' }],
    });
  });

  test('a call made twice and replayed once is removed once', () => {
    const call = { name: 'fx__count', arguments: '{}' };
    expect(toolCallChanges([call, call], [call])).toEqual({ added: [], removed: [call], changed: [] });
  });
});

describe('the replays\' order', () => {
  test('a group\'s runs replay in order; groups in their first run\'s order', () => {
    expect(replayGroups([0, 1, 0, 2, 1])).toEqual([[0, 2], [1, 4], [3]]);
  });
});

describe('a bounded search', () => {
  test('catastrophic backtracking is interrupted at the bound', () => {
    const started = Date.now();
    expect(searchBounded('(a+)+$', `${'a'.repeat(40)}b`, 100)).toBe('timed_out');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test('a pattern matches or does not', () => {
    expect(searchBounded('count is \\d', 'The count is 3.', 1000)).toBe('matched');
    expect(searchBounded('^count', 'The count is 3.', 1000)).toBe('not_matched');
  });
});

describe('the eval request', () => {
  const base = { name: 'e', tools: 'recorded' };

  test('runIds or threadIds, one of them; not a run twice', () => {
    expect(createEvalBody.safeParse({ ...base, runIds: ['run_a'] }).success).toBe(true);
    expect(createEvalBody.safeParse(base).success).toBe(false);
    expect(createEvalBody.safeParse({ ...base, runIds: ['run_a'], threadIds: ['thr_a'] }).success).toBe(false);
    const twice = createEvalBody.safeParse({ ...base, runIds: ['run_a', 'run_a'] });
    expect(twice.error?.issues[0].path).toEqual(['runIds', 1]);
  });

  test('outputMatches must be a regular expression', () => {
    const parsed = createEvalBody.safeParse({ ...base, runIds: ['run_a'], expect: { outputMatches: '(' } });
    expect(parsed.error?.issues[0].path).toEqual(['expect', 'outputMatches']);
    expect(parsed.error?.issues[0].message).toMatch(/not a regular expression/);
  });
});
