/**
 * The model's words as it writes them, from a run's event stream (docs/api.md, following runs):
 * the turn and attempt shown, and their text so far. Pure, so that the page's rules are tested alone.
 */
export interface LiveText { turn: number; attempt: number; text: string; ended: boolean }

export const NO_LIVE_TEXT: LiveText = { turn: 0, attempt: 0, text: '', ended: false };

const numberOf = (value: unknown) => (typeof value === 'number' ? value : 0);

/**
 * The words shown after one event. `text_delta` adds to its turn's text; `text_reset` starts it
 * again (a retried attempt, or a resumed stream, whose text so far follows and replaces what was
 * shown); the end of the turn shown (`turn_ended`, `run_ended`) clears it. Words and ends of an
 * earlier turn or attempt than the one shown are old news: a resumed stream replays the numbered
 * events it missed, which may come after the words of the turn under way.
 */
export function nextLiveText(shown: LiveText, event: string, data: Record<string, unknown>): LiveText {
  const turn = numberOf(data.turn);
  const attempt = numberOf(data.attempt);
  if (event === 'run_ended') return { ...shown, text: '', ended: true, turn: Number.MAX_SAFE_INTEGER };
  if (event === 'turn_ended') return turn >= shown.turn ? { turn, attempt: shown.attempt, text: '', ended: true } : shown;
  if (event !== 'text_delta' && event !== 'text_reset') return shown;
  const old = turn < shown.turn || (turn === shown.turn && (shown.ended || attempt < shown.attempt));
  if (old) return shown;
  if (event === 'text_reset') return { turn, attempt, text: '', ended: false };
  const text = String(data.text ?? '');
  return turn === shown.turn && attempt === shown.attempt ? { ...shown, text: shown.text + text } : { turn, attempt, text, ended: false };
}
