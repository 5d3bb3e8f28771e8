import { MAX_SAMPLING_REQUEST_BYTES, samplingRequest } from '../../core/sampling';

describe('a sampling request as the model gets it', () => {
  test('only the messages (as text), the systemPrompt and the capped maxTokens: tools, preferences and context requests are dropped', () => {
    const params = {
      messages: [
        { role: 'user', content: { type: 'text', text: 'describe this' } },
        { role: 'assistant', content: [{ type: 'text', text: 'which?' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }] },
        { role: 'user', content: { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' } },
      ],
      systemPrompt: 'Be terse.', maxTokens: 5000, temperature: 0.3,
      tools: [{ name: 'rm_rf', inputSchema: { type: 'object' } }], toolChoice: { mode: 'required' },
      modelPreferences: { hints: [{ name: 'the-biggest-model' }] }, includeContext: 'allServers', metadata: { x: 1 },
    };
    expect(samplingRequest(params, 1024)).toEqual({
      messages: [
        { role: 'user', text: 'describe this' },
        { role: 'assistant', text: 'which?\n[image omitted]' },
        { role: 'user', text: '[audio omitted]' },
      ],
      systemPrompt: 'Be terse.', maxTokens: 1024, temperature: 0.3,
    });
  });

  test('a smaller maxTokens stays; a temperature out of range is not passed on', () => {
    expect(samplingRequest({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10, temperature: 9 }, 1024))
      .toEqual({ messages: [{ role: 'user', text: 'hi' }], maxTokens: 10 });
  });

  test('refused: no messages, or more than 64 KiB', () => {
    expect(samplingRequest({ messages: [], maxTokens: 10 }, 1024)).toBe('a sampling request without messages');
    const big = { messages: [{ role: 'user', content: { type: 'text', text: 'x'.repeat(MAX_SAMPLING_REQUEST_BYTES) } }], maxTokens: 10 };
    expect(samplingRequest(big, 1024)).toBe(`a sampling request over ${MAX_SAMPLING_REQUEST_BYTES} bytes`);
  });
});
