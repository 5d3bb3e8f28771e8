import { NO_LIVE_TEXT, nextLiveText, type LiveText } from '../../console/src/live-text';

/** The model's words on a run's page, from the events of its stream, in the order they come. */
describe('the words a run\'s page shows as the model writes them', () => {
  const play = (events: [string, Record<string, unknown>][], from: LiveText = NO_LIVE_TEXT) => events.reduce((shown, [event, data]) => nextLiveText(shown, event, data), from);
  const delta = (turn: number, text: string, attempt = 1): [string, Record<string, unknown>] => ['text_delta', { turn, attempt, text }];
  const reset = (turn: number, attempt = 1): [string, Record<string, unknown>] => ['text_reset', { turn, attempt }];

  test('deltas add up to the turn\'s text, and its end clears it', () => {
    expect(play([delta(1, 'Hello, '), delta(1, 'world')]).text).toBe('Hello, world');
    expect(play([delta(1, 'Hello'), ['turn_ended', { turn: 1 }]]).text).toBe('');
    expect(play([delta(1, 'Hello'), ['run_ended', {}]]).text).toBe('');
  });

  test('a resumed stream\'s text_reset, then the text so far, replaces what was shown: the words are not doubled', () => {
    const before = play([delta(2, 'The quick '), delta(2, 'brown')]);
    expect(play([reset(2), delta(2, 'The quick brown fox'), delta(2, ' jumps')], before).text).toBe('The quick brown fox jumps');
  });

  test('a retried attempt starts again; words of an earlier attempt or turn, and a replayed end of an earlier turn, change nothing', () => {
    const retried = play([delta(1, 'half of it'), reset(1, 2), delta(1, 'all', 2), delta(1, ' of it', 2)]);
    expect(retried.text).toBe('all of it');
    expect(play([delta(1, 'late words', 1)], retried).text).toBe('all of it');
    // A stream resumed in turn 3 replays turn 2's end after turn 3's words so far.
    const resumed = play([reset(3), delta(3, 'so far'), ['turn_ended', { turn: 2 }], ['turn_started', { turn: 3 }], delta(3, ', and on')]);
    expect(resumed.text).toBe('so far, and on');
    // A piece heard after its turn ended does not bring the words back.
    expect(play([delta(3, 'x'), ['turn_ended', { turn: 3 }], delta(3, 'late')]).text).toBe('');
    // The next turn's words show after the last one's end.
    expect(play([delta(3, 'x'), ['turn_ended', { turn: 3 }], delta(4, 'next')]).text).toBe('next');
  });
});
