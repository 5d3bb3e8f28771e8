import { matchRecordedCalls, notRecordedText, replayWorkflowInput, takesRecordedResults, type OriginalCall } from '../../core/replay';

const original = (turn: number, slot: number, name: string, args: unknown): OriginalCall => ({ turn, slot, name, arguments: args });

describe('which recorded result a replayed call takes', () => {
  const originals = [
    original(1, 1, 'fx__echo', { text: 'one', n: 1 }),
    original(1, 2, 'source_query', { sql: 'SELECT 1' }),
    original(2, 1, 'fx__echo', { n: 1, text: 'one' }),
  ];

  test('the same name and arguments (in any key order) take the first such recorded result', () => {
    expect(matchRecordedCalls([{ name: 'fx__echo', arguments: { n: 1, text: 'one' } }], originals)).toEqual([{ turn: 1, slot: 1 }]);
    expect(matchRecordedCalls([{ name: 'source_query', arguments: { sql: 'SELECT 1' } }], originals)).toEqual([{ turn: 1, slot: 2 }]);
  });

  test('each recorded result is taken at most once: a third identical call finds none', () => {
    const call = { name: 'fx__echo', arguments: { text: 'one', n: 1 } };
    expect(matchRecordedCalls([call, call, call], originals)).toEqual([{ turn: 1, slot: 1 }, { turn: 2, slot: 1 }, null]);
  });

  test('other arguments, another name, or missing arguments find none', () => {
    expect(matchRecordedCalls([
      { name: 'fx__echo', arguments: { text: 'two', n: 1 } },
      { name: 'fx__other', arguments: { text: 'one', n: 1 } },
      { name: 'source_query', arguments: { sql: 'SELECT 1', limit: 10 } },
    ], originals)).toEqual([null, null, null]);
    expect(matchRecordedCalls([{ name: 'noargs', arguments: undefined }], [original(1, 1, 'noargs', {})])).toEqual([{ turn: 1, slot: 1 }]);
  });

  test('the text a call without a recorded result reads', () => {
    expect(notRecordedText('fx__echo', 'run_1')).toBe('Not recorded: fx__echo was not called with these arguments in run run_1.');
  });

  test('only a live replay runs its calls', () => {
    expect(takesRecordedResults({ runId: 'r', tools: 'recorded' })).toBe(true);
    expect(takesRecordedResults({ runId: 'r', tools: 'recorded-then-live' })).toBe(true);
    expect(takesRecordedResults({ runId: 'r', tools: 'live' })).toBe(false);
  });
});

describe('how a replay\'s workflow starts', () => {
  test('one that takes recorded results is told its original, and stops at a reached limit; a live one starts as any run', () => {
    expect(replayWorkflowInput({ runId: 'run_1', tools: 'recorded-then-live' }))
      .toEqual({ replay: { runId: 'run_1', tools: 'recorded-then-live' }, limits: { onLimit: 'stop' } });
    expect(replayWorkflowInput({ runId: 'run_1', tools: 'live' })).toEqual({});
  });
});
