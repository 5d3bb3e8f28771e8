import {
  IDEMPOTENCY_KEY_META, idempotencyMeta, streamedToolCallIds, toolCallIdsOf, uniqueToolCalls,
} from '../../core/tool-call-ids';
import type { ChatMessage, ToolCall } from '../../core/messages';

const call = (id: string, name = 'fx__charge'): ToolCall => ({ id, name, arguments: {} });
const ids = (calls: ToolCall[]) => calls.map((c) => c.id);

describe('tool-call ids unique within a run', () => {
  test('an id no earlier turn used is kept, the call object itself too', () => {
    const calls = [call('call_1'), call('call_2')];
    const named = uniqueToolCalls(calls, new Set(['call_9']), 2);
    expect(ids(named)).toEqual(['call_1', 'call_2']);
    expect(named[0]).toBe(calls[0]);
  });

  test('a provider that repeats call_1 in every turn: each turn\'s call_1 gets the turn in its id', () => {
    const earlier = new Set<string>();
    const stored: string[] = [];
    for (let turn = 1; turn <= 4; turn++) {
      const [named] = uniqueToolCalls([call('call_1')], earlier, turn);
      earlier.add(named.id);
      stored.push(named.id);
    }
    expect(stored).toEqual(['call_1', 'call_1-t2', 'call_1-t3', 'call_1-t4']);
  });

  test('repeats within one reply, and a renamed id that is taken too, get further suffixes; nothing else changes', () => {
    const named = uniqueToolCalls([call('call_1', 'a'), call('call_1', 'b'), call('call_1-t3', 'c'), call('call_1', 'd')], new Set(['call_1']), 3);
    expect(ids(named)).toEqual(['call_1-t3', 'call_1-t3-2', 'call_1-t3-t3', 'call_1-t3-3']);
    expect(new Set(ids(named)).size).toBe(4);
    expect(named.map((c) => c.name)).toEqual(['a', 'b', 'c', 'd']);
  });

  test('deterministic: the same reply after the same turns is named alike (a retried turn)', () => {
    const reply = [call('call_1'), call('call_2'), call('call_1')];
    const earlier = new Set(['call_1', 'call_2']);
    expect(uniqueToolCalls(reply, earlier, 5)).toEqual(uniqueToolCalls(reply, earlier, 5));
    expect(ids(uniqueToolCalls(reply, earlier, 5))).toEqual(['call_1-t5', 'call_2-t5', 'call_1-t5-2']);
  });

  test('a renamed id keeps to what providers accept: [A-Za-z0-9_-], at most 64 characters', () => {
    const long = 'x'.repeat(64);
    const [named] = uniqueToolCalls([call(long)], new Set([long]), 12);
    expect(named.id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(named.id.endsWith('-t12')).toBe(true);
    expect(uniqueToolCalls([call('call_1')], new Set(['call_1']), 2)[0].id).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  test('the run\'s earlier ids are those of its stored replies\' calls', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', toolCalls: [call('call_1'), call('call_2')] },
      { role: 'tool', toolCallId: 'call_1', name: 'fx__charge', content: 'ok' },
      { role: 'assistant', content: '', toolCalls: [call('call_1-t2')] },
    ];
    expect([...toolCallIdsOf(messages)].sort()).toEqual(['call_1', 'call_1-t2', 'call_2']);
  });

  test('a call\'s streamed input goes under the id its call is stored under', () => {
    const earlier = new Set(['call_1', 'call_2']);
    const streamed = streamedToolCallIds(earlier, 3);
    expect([streamed('call_1'), streamed('call_1'), streamed('call_7'), streamed('call_2')]).toEqual(['call_1-t3', 'call_1-t3', 'call_7', 'call_2-t3']);
    expect(ids(uniqueToolCalls([call('call_1'), call('call_7'), call('call_2')], earlier, 3))).toEqual(['call_1-t3', 'call_7', 'call_2-t3']);
  });

  test('the idempotency key a tools/call carries: <runId>/<toolCallId>, under the engine\'s _meta key', () => {
    expect(idempotencyMeta('run_abc', 'call_1-t2')).toEqual({ 'io.github.durable-agent-engine/idempotency-key': 'run_abc/call_1-t2' });
    expect(IDEMPOTENCY_KEY_META).toBe('io.github.durable-agent-engine/idempotency-key');
  });
});
