import { createScriptedProvider } from '../../llm/scripted';
import type { ChatMessage } from '../../core/messages';

describe('the scripted provider', () => {
  const provider = createScriptedProvider();
  const signal = new AbortController().signal;
  const model = { provider: 'scripted' as const, script: [
    { toolCalls: [{ name: 'a', arguments: { n: 1 } }, { name: 'b', arguments: {} }] },
    { text: 'results: {{tool_results}}' },
  ] };
  test('plays one step per turn, with one tool call per entry', async () => {
    const r = await provider.complete({ model, messages: [], tools: [], turn: 1, step: 0, signal });
    expect(r.toolCalls).toEqual([{ id: 'call_1_1', name: 'a', arguments: { n: 1 } }, { id: 'call_1_2', name: 'b', arguments: {} }]);
  });
  test('replaces {{tool_results}} with the previous turn results, joined by newlines', async () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', toolCalls: [] },
      { role: 'tool', toolCallId: '1', name: 'a', content: 'one' },
      { role: 'tool', toolCallId: '2', name: 'b', content: 'two' },
    ];
    const r = await provider.complete({ model, messages, tools: [], turn: 2, step: 1, signal });
    expect(r).toMatchObject({ text: 'results: one\ntwo', toolCalls: [] });
  });
  test('ends with the last text when the script runs out, or with an empty answer', async () => {
    expect((await provider.complete({ model, messages: [], tools: [], turn: 9, step: 8, signal })).text).toBe('results: {{tool_results}}');
    const toolsOnly = { provider: 'scripted' as const, script: [{ toolCalls: [{ name: 'a', arguments: {} }] }] };
    expect(await provider.complete({ model: toolsOnly, messages: [], tools: [], turn: 2, step: 1, signal })).toMatchObject({ text: '', toolCalls: [] });
  });
  test('plays the step at the run\'s cursor, not the turn\'s: a sampling answer took a step in between', async () => {
    const script = { provider: 'scripted' as const, script: [{ toolCalls: [{ name: 'a', arguments: {} }] }, { text: 'sampled' }, { text: 'final' }] };
    expect((await provider.complete({ model: script, messages: [], tools: [], turn: 2, step: 2, signal })).text).toBe('final');
    expect((await provider.complete({ model: script, messages: [], tools: [], turn: 1, step: 1, signal })).text).toBe('sampled');
  });
  test('a capped answer is cut at maxTokens (4 characters a token) and says so', async () => {
    const long = { provider: 'scripted' as const, script: [{ text: 'x'.repeat(100) }] };
    const capped = await provider.complete({ model: long, messages: [], tools: [], turn: 1, step: 0, maxTokens: 5, signal });
    expect(capped).toMatchObject({ text: 'x'.repeat(20), finishReason: 'length' });
    expect((await provider.complete({ model: long, messages: [], tools: [], turn: 1, step: 0, signal })).finishReason).toBe('stop');
  });
  test('a step with delayMs stops waiting when the activity is cancelled', async () => {
    const ac = new AbortController();
    const slow = { provider: 'scripted' as const, script: [{ text: 'late', delayMs: 60_000 }] };
    const pending = provider.complete({ model: slow, messages: [], tools: [], turn: 1, step: 0, signal: ac.signal });
    ac.abort(new Error('cancelled'));
    await expect(pending).rejects.toThrow('cancelled');
  });
});
