import { ProgressDisplay, RunEventRenderer } from '../../cli/progress';

/** The model's words as `agent-engine run --follow` writes them, from the events of a run's stream. */
describe('the CLI writes the model\'s words once', () => {
  function follow(events: [string, Record<string, unknown>][]): string {
    let written = '';
    const renderer = new RunEventRenderer(new ProgressDisplay({ write: (text: string) => { written += text; } }));
    for (const [event, data] of events) renderer.render({ event, data });
    return written;
  }
  const delta = (text: string, attempt = 1, turn = 1): [string, Record<string, unknown>] => ['text_delta', { turn, attempt, text }];
  const reset = (attempt = 1, turn = 1): [string, Record<string, unknown>] => ['text_reset', { turn, attempt }];

  test('a resumed stream\'s text_reset and text so far add only what was not on screen yet', () => {
    expect(follow([delta('The quick '), delta('brown'), reset(), delta('The quick brown fox'), delta(' jumps')])).toBe('  The quick brown fox jumps');
    // The text so far may come in pieces, and may not yet reach what is on screen.
    expect(follow([delta('The quick brown'), reset(), delta('The quick'), delta(' brown fox')])).toBe('  The quick brown fox');
  });

  test('a retried attempt says so and writes its own words; a reset before any words of the turn says nothing', () => {
    expect(follow([delta('half of'), reset(2), delta('all of it', 2)])).toBe('  half of\n  (the model starts again: attempt 2)\n  all of it');
    expect(follow([reset(1, 3), delta('so far', 1, 3)])).toBe('  so far');
  });
});
