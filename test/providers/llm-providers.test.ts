import type { ModelConfig } from '../../core/agent-model';
import { createAiSdkProvider } from '../../llm/ai-sdk-provider';
import { classifyLlmError } from '../../llm/errors';
import type { ChatMessage, ToolDefinition } from '../../core/messages';
import { startFakeLlmServer, type FakeLlmServer } from '../support/fake-llm-server';

const KEYS: Record<string, string> = { OPENAI_API_KEY: 'sk-openai-test', ANTHROPIC_API_KEY: 'sk-ant-test', LOCAL_KEY: 'local-secret' };
const provider = createAiSdkProvider((name) => KEYS[name], ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'LOCAL_KEY']);

/** A conversation with the shapes that must survive the trip: a conventional-prompt pair, parallel calls, their results. */
const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'First context.' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'Weather', name: 'get_weather', arguments: { city: 'Paris' } }] },
  { role: 'tool', toolCallId: 'Weather', name: 'get_weather', content: '{"temp":15}' },
  { role: 'user', content: 'Compare Paris and Oslo.' },
  { role: 'assistant', content: 'Looking both up.', toolCalls: [
    { id: 'call_1_1', name: 'fx__weather', arguments: { city: 'Paris' } },
    { id: 'call_1_2', name: 'fx__weather', arguments: { city: 'Oslo' } },
  ] },
  { role: 'tool', toolCallId: 'call_1_1', name: 'fx__weather', content: 'Paris: 15' },
  { role: 'tool', toolCallId: 'call_1_2', name: 'fx__weather', content: 'Oslo: 3' },
];
const TOOLS: ToolDefinition[] = [{
  name: 'fx__weather', description: 'Weather for a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];
const REPLY = {
  text: 'Checking more.',
  toolCalls: [{ id: 'tc_a', name: 'fx__weather', args: { city: 'Rome' } }, { id: 'tc_b', name: 'fx__weather', args: { city: 'Bern' } }],
  usage: { input: 120, output: 30 },
};

const complete = (model: ModelConfig) => provider.complete({ model, messages: MESSAGES, tools: TOOLS, turn: 3, step: 2, signal: new AbortController().signal });

describe('LLM providers against servers speaking the real wire formats', () => {
  let server: FakeLlmServer;
  beforeAll(async () => { server = await startFakeLlmServer(); });
  afterAll(async () => { await server?.close(); });

  describe.each([false, true])('streaming %s', (stream) => {
    test('OpenAI-compatible: messages, tool-call ids, parallel calls and results go out; text, calls and usage come back', async () => {
      server.play([REPLY]);
      const res = await complete({ provider: 'openai', name: 'gpt-test', baseUrl: server.baseUrl, apiKeyEnv: 'OPENAI_API_KEY', temperature: 0.2, maxTokens: 500, stream });
      expect(res).toEqual({
        text: 'Checking more.',
        toolCalls: [{ id: 'tc_a', name: 'fx__weather', arguments: { city: 'Rome' } }, { id: 'tc_b', name: 'fx__weather', arguments: { city: 'Bern' } }],
        usage: { inputTokens: 120, outputTokens: 30 },
        // A reply that calls tools stopped for them: neither a stop nor its token cap.
        finishReason: 'other',
      });
      const [req] = server.requests;
      expect(req.path).toBe('/v1/chat/completions');
      expect(req.headers.authorization).toBe('Bearer sk-openai-test');
      expect(req.body).toMatchObject({ model: 'gpt-test', temperature: 0.2, max_tokens: 500 });
      expect(Boolean(req.body.stream)).toBe(stream);
      expect(req.body.tools).toEqual([{ type: 'function', function: { name: 'fx__weather', description: 'Weather for a city', parameters: TOOLS[0].inputSchema } }]);
      const messages = req.body.messages as Record<string, unknown>[];
      expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user', 'assistant', 'tool', 'tool']);
      expect(messages[2]).toMatchObject({ tool_calls: [{ id: 'Weather', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] });
      expect(messages[3]).toEqual({ role: 'tool', tool_call_id: 'Weather', content: '{"temp":15}' });
      expect(messages[5]).toMatchObject({ content: 'Looking both up.', tool_calls: [{ id: 'call_1_1' }, { id: 'call_1_2' }] });
      expect(messages.slice(6)).toEqual([
        { role: 'tool', tool_call_id: 'call_1_1', content: 'Paris: 15' },
        { role: 'tool', tool_call_id: 'call_1_2', content: 'Oslo: 3' },
      ]);
    });

    test('Anthropic Messages: system on top, tool_use ids, parallel tool_results in one user turn; text, calls and usage come back', async () => {
      server.play([REPLY]);
      const res = await complete({ provider: 'anthropic', name: 'claude-test', baseUrl: server.baseUrl, apiKeyEnv: 'ANTHROPIC_API_KEY', maxTokens: 400, stream });
      expect(res.text).toBe('Checking more.');
      expect(res.toolCalls).toEqual([
        { id: 'tc_a', name: 'fx__weather', arguments: { city: 'Rome' } }, { id: 'tc_b', name: 'fx__weather', arguments: { city: 'Bern' } },
      ]);
      expect(res.usage).toEqual({ inputTokens: 120, outputTokens: 30 });
      const [req] = server.requests;
      expect(req.path).toBe('/v1/messages');
      expect(req.headers['x-api-key']).toBe('sk-ant-test');
      expect(req.body).toMatchObject({ model: 'claude-test', max_tokens: 400, system: [{ type: 'text', text: 'You are terse.' }] });
      expect(Boolean(req.body.stream)).toBe(stream);
      expect(req.body.tools).toMatchObject([{ name: 'fx__weather', description: 'Weather for a city', input_schema: TOOLS[0].inputSchema }]);
      const messages = req.body.messages as { role: string; content: Record<string, unknown>[] }[];
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
      expect(messages[1].content).toEqual([{ type: 'tool_use', id: 'Weather', name: 'get_weather', input: { city: 'Paris' } }]);
      expect(messages[2].content).toEqual([
        { type: 'tool_result', tool_use_id: 'Weather', content: '{"temp":15}' },
        { type: 'text', text: 'Compare Paris and Oslo.' },
      ]);
      expect(messages[3].content.map((c) => c.type)).toEqual(['text', 'tool_use', 'tool_use']);
      expect(messages[4].content).toEqual([
        { type: 'tool_result', tool_use_id: 'call_1_1', content: 'Paris: 15' },
        { type: 'tool_result', tool_use_id: 'call_1_2', content: 'Oslo: 3' },
      ]);
    });
  });

  test('a local server (Ollama, vLLM, llama.cpp) needs no key; a named apiKeyEnv is read by name', async () => {
    server.play([{ text: 'hi' }]);
    await complete({ provider: 'openai', name: 'llama3', baseUrl: server.baseUrl, apiKeyEnv: 'LOCAL_KEY' });
    expect(server.requests[0].headers.authorization).toBe('Bearer local-secret');
    const keyless = createAiSdkProvider(() => undefined);
    server.play([{ text: 'hi' }]);
    const res = await keyless.complete({ model: { provider: 'openai', name: 'llama3', baseUrl: server.baseUrl }, messages: MESSAGES, tools: [], turn: 1, step: 0, signal: new AbortController().signal });
    expect(res.text).toBe('hi');
    expect(server.requests[0].headers.authorization).toBeUndefined();
    await expect(keyless.complete({ model: { provider: 'anthropic', name: 'claude' }, messages: MESSAGES, tools: [], turn: 1, step: 0, signal: new AbortController().signal }))
      .rejects.toThrow('set ANTHROPIC_API_KEY in the worker');
  });

  test.each([
    [{ status: 429, headers: { 'retry-after': '7' }, body: { error: { message: 'Rate limit reached' } } }, { type: 'LlmRateLimited', retryable: true, retryAfterMs: 7000 }],
    [{ status: 429, headers: { 'retry-after-ms': '1500' }, body: { error: { message: 'slow down' } } }, { type: 'LlmRateLimited', retryable: true, retryAfterMs: 1500 }],
    [{ status: 503, body: { error: { message: 'overloaded' } } }, { type: 'LlmServerError', retryable: true }],
    [{ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }, { type: 'LlmServerError', retryable: true }],
    [{ status: 400, body: { error: { message: 'Invalid value for temperature' } } }, { type: 'LlmBadRequest', retryable: false }],
    [{ status: 401, body: { error: { message: 'Incorrect API key provided' } } }, { type: 'LlmAuthError', retryable: false }],
    [{ status: 403, body: { error: { message: 'forbidden' } } }, { type: 'LlmAuthError', retryable: false }],
    [{ status: 404, body: { error: { message: 'The model gpt-9 does not exist' } } }, { type: 'LlmNotFound', retryable: false }],
    [{ status: 400, body: { error: { message: "This model's maximum context length is 8192 tokens", code: 'context_length_exceeded' } } }, { type: 'LlmContextLength', retryable: false }],
    [{ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } } }, { type: 'LlmContextLength', retryable: false }],
  ])('HTTP %j is classified as %j', async (reply, expected) => {
    for (const [providerName, stream] of [['openai', false], ['anthropic', true]] as const) {
      server.play([reply]);
      const err = await complete({ provider: providerName, name: 'm', baseUrl: server.baseUrl, stream }).catch((e: unknown) => e);
      const failure = classifyLlmError(err);
      expect(failure).toMatchObject(expected);
      if (!('retryAfterMs' in expected)) expect(failure.retryAfterMs).toBeUndefined();
      expect(server.requests).toHaveLength(1); // the SDK's own retries are off
    }
  });

  test('an unreachable server is a retryable network error; messages carry the provider\'s words', async () => {
    const err = await complete({ provider: 'openai', name: 'm', baseUrl: 'http://127.0.0.1:9/v1' }).catch((e: unknown) => e);
    expect(classifyLlmError(err)).toMatchObject({ type: 'LlmNetworkError', retryable: true });
    server.play([{ status: 401, body: { error: { message: 'Incorrect API key provided' } } }]);
    const auth = await complete({ provider: 'openai', name: 'm', baseUrl: server.baseUrl }).catch((e: unknown) => e);
    expect(classifyLlmError(auth).message).toBe('LLM provider answered 401: Incorrect API key provided');
  });

  test.each(['openai', 'anthropic'] as const)('%s: an endpoint answering JSON to a streaming request is read as one whole response', async (providerName) => {
    server.play([{ text: 'All at once.', toolCalls: [{ id: 'call_j1', name: 'get_weather', args: { city: 'Oslo' } }], usage: { input: 20, output: 6 }, json: true }]);
    const pieces: string[] = [];
    const reply = await provider.complete({
      model: { provider: providerName, name: 'm', baseUrl: server.baseUrl, apiKeyEnv: providerName === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY' },
      messages: MESSAGES, tools: TOOLS, turn: 1, step: 0, signal: new AbortController().signal, onText: (t) => pieces.push(t),
    });
    expect(server.requests[0].body.stream).toBe(true);
    expect(reply).toMatchObject({ text: 'All at once.', toolCalls: [{ id: 'call_j1', name: 'get_weather', arguments: { city: 'Oslo' } }], usage: { inputTokens: 20, outputTokens: 6 } });
    expect(pieces.join('')).toBe('All at once.');
  });

  test('a stream that breaks off after a 200 is a retryable network error, not a bad request', async () => {
    server.play([{ text: 'Half an answer', cutAfterChunks: 2 }]);
    const err = await complete({ provider: 'openai', name: 'm', baseUrl: server.baseUrl, stream: true }).catch((e: unknown) => e);
    expect(classifyLlmError(err)).toMatchObject({ type: 'LlmNetworkError', retryable: true });
  });
});
