import { followTurnText, type TextFollowDeps } from '../use-cases/runs/follow-text';

/**
 * The model's words for an MCP client that asked for progress: each notification's message holds
 * the current turn's text so far (its end, when long), at most 4 a second, sent only when it grew.
 */

const EVERY_MS = 250;
const MESSAGE_CHARS = 1_000;

export function textProgress(
  deps: TextFollowDeps, runId: string, report: (message: string) => Promise<unknown>,
): { close(): void } {
  const texts = new Map<number, string>();
  let turn = 0;
  let sentAt = 0;
  let sent = '';
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const flush = () => {
    timer = undefined;
    const text = texts.get(turn) ?? '';
    if (closed || !text || text === sent) return;
    sent = text;
    sentAt = Date.now();
    const chars = [...text];
    void report(chars.length > MESSAGE_CHARS ? `…${chars.slice(-MESSAGE_CHARS).join('')}` : text);
  };

  const follower = followTurnText(deps, runId, async (item) => {
    if (item.event === 'tool_input_delta') return;
    turn = item.data.turn;
    if (item.event === 'text_reset') texts.set(turn, '');
    else texts.set(turn, (texts.get(turn) ?? '') + item.data.text);
    if (!timer) timer = setTimeout(flush, Math.max(0, sentAt + EVERY_MS - Date.now()));
  });
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      follower.close();
    },
  };
}
