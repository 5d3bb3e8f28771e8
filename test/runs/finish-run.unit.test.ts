import { committableMessages } from '../../activities/finish-run';
import type { ChatMessage } from '../../core/messages';

describe('committing a run to its thread', () => {
  const m = (turn: number, slot: number, message: ChatMessage) => ({ turn, slot, message });
  test('keeps whole turns only: a tool call without its result is dropped with everything after it', () => {
    const call = (id: string) => ({ id, name: 't', arguments: {} });
    const kept = committableMessages([
      m(0, 0, { role: 'user', content: 'q' }),
      m(1, 0, { role: 'assistant', content: '', toolCalls: [call('1')] }),
      m(1, 1, { role: 'tool', toolCallId: '1', name: 't', content: 'r' }),
      m(2, 0, { role: 'assistant', content: '', toolCalls: [call('2'), call('3')] }),
      m(2, 1, { role: 'tool', toolCallId: '2', name: 't', content: 'r' }),
    ]);
    expect(kept.map((x) => x.role)).toEqual(['user', 'assistant', 'tool']);
  });
});
