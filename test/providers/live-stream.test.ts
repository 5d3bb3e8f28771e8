import type { ModelConfig } from '../../core/agent-model';
import { createAiSdkProvider } from '../../llm/ai-sdk-provider';
import { classifyLlmError } from '../../llm/errors';
import { startFakeLlmServer } from '../support/fake-llm-server';
import { an, oa, rawServer, sse, type RawServer } from '../support/raw-llm-server';

/**
 * A model's event stream read as it comes (llm/live-stream.ts), against a local server writing
 * the wire formats' raw bytes: events split across writes, CRLF lines, interleaved tool calls,
 * thinking blocks, errors mid-stream, redirects and aborts.
 */

const KEYS: Record<string, string> = { OPENAI_API_KEY: 'sk-openai-live', ANTHROPIC_API_KEY: 'sk-ant-live' };
const provider = createAiSdkProvider((name) => KEYS[name], ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY']);

function call(model: Partial<ModelConfig> & { provider: 'openai' | 'anthropic' }, signal = new AbortController().signal) {
  const texts: string[] = [];
  const inputs: [string, string][] = [];
  const reply = provider.complete({
    model: { name: 'm', stream: true, ...model } as ModelConfig, messages: [{ role: 'user', content: 'go' }], tools: [], turn: 1, step: 0, signal,
    onText: (t) => texts.push(t), onToolInput: (id, t) => inputs.push([id, t]),
  });
  return { reply, texts, inputs };
}

describe('a model\'s event stream, read as it comes', () => {
  let server: RawServer;
  beforeAll(async () => { server = await rawServer(); });
  afterAll(async () => { await server?.close(); });

  test('OpenAI: words reach the callback before the stream ends; interleaved tool calls keep their ids; usage and stop reason', async () => {
    let texts: string[] = [];
    const firstWords = new Promise<void>((resolve) => {
      const poll = () => (texts.length > 0 ? resolve() : setTimeout(poll, 5));
      poll();
    });
    const first = oa({ role: 'assistant', content: 'Hello' });
    server.play([
      first.slice(0, 25), first.slice(25), () => firstWords,
      oa({ content: ', world' }).replace(/\n/g, '\r\n'),
      oa({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get', arguments: '' } }] }),
      oa({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'put', arguments: '{"k":' } }] }),
      oa({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Oslo"}' } }] }),
      oa({ tool_calls: [{ index: 1, function: { arguments: '2}' } }] }),
      oa({}, 'tool_calls'),
      sse({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } }),
      'data: [DONE]\n\n',
    ]);
    const run = call({ provider: 'openai', baseUrl: server.url, apiKeyEnv: 'OPENAI_API_KEY' });
    texts = run.texts;
    const reply = await run.reply;
    expect(run.texts).toEqual(['Hello', ', world']);
    expect(reply.text).toBe('Hello, world');
    expect(reply.toolCalls).toEqual([{ id: 'call_a', name: 'get', arguments: { city: 'Oslo' } }, { id: 'call_b', name: 'put', arguments: { k: 2 } }]);
    expect(run.inputs).toEqual([['call_b', '{"k":'], ['call_a', '{"city":"Oslo"}'], ['call_b', '2}']]);
    expect(reply.usage).toEqual({ inputTokens: 11, outputTokens: 7 });
    expect(server.requests.at(-1)?.headers.authorization).toBe('Bearer sk-openai-live');
  });

  test('Anthropic: a thinking block is not the answer; text and tool input stream; input and output tokens', async () => {
    server.play([
      an('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 30, output_tokens: 1 } } }),
      an('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }),
      an('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Let me see.' } }),
      an('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'sig' } }),
      an('content_block_stop', { index: 0 }),
      an('ping'),
      an('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
      an('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Rain ' } }),
      an('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'later.' } }),
      an('content_block_stop', { index: 1 }),
      an('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get', input: {} } }),
      an('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":' } }),
      an('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '"Bergen"}' } }),
      an('content_block_stop', { index: 2 }),
      an('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 25 } }),
      an('message_stop'),
    ]);
    const run = call({ provider: 'anthropic', baseUrl: server.url, apiKeyEnv: 'ANTHROPIC_API_KEY' });
    const reply = await run.reply;
    expect(run.texts).toEqual(['Rain ', 'later.']);
    expect(reply.text).toBe('Rain later.');
    expect(reply.toolCalls).toEqual([{ id: 'toolu_1', name: 'get', arguments: { city: 'Bergen' } }]);
    expect(run.inputs).toEqual([['toolu_1', '{"city":'], ['toolu_1', '"Bergen"}']]);
    expect(reply.usage).toEqual({ inputTokens: 30, outputTokens: 25 });
  });

  test.each([
    ['openai', [oa({ role: 'assistant', content: 'Half' }), sse({ error: { message: 'The server overloaded mid-answer' } })]],
    ['anthropic', [
      an('message_start', { message: { id: 'msg_2', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 3, output_tokens: 0 } } }),
      an('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      an('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Half' } }),
      an('error', { error: { type: 'overloaded_error', message: 'The server overloaded mid-answer' } }),
    ]],
  ] as const)('%s: an error event after some words fails the call with the provider\'s words, retryably', async (wire, writes) => {
    server.play([...writes]);
    const run = call({ provider: wire, baseUrl: server.url, apiKeyEnv: wire === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY' });
    const err = await run.reply.catch((e: unknown) => e);
    expect(run.texts).toEqual(['Half']);
    expect(classifyLlmError(err)).toMatchObject({ retryable: true });
    expect(JSON.stringify(err) + String((err as Error).message)).toContain('overloaded mid-answer');
  });

  test.each(['openai', 'anthropic'] as const)('%s: calls at once on one (kept) model each hear their own words only', async (wire) => {
    const fake = await startFakeLlmServer();
    try {
      const answers = Array.from({ length: 6 }, (_, i) => `Answer number ${i} ${'word '.repeat(i + 3)}`);
      fake.play(answers.map((text) => ({ text })));
      const calls = answers.map(() => call({ provider: wire, baseUrl: fake.baseUrl, apiKeyEnv: wire === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY' }));
      const replies = await Promise.all(calls.map((c) => c.reply));
      expect(replies.map((r) => r.text).sort()).toEqual([...answers].sort());
      replies.forEach((r, i) => {
        expect(calls[i].texts.length).toBeGreaterThan(1);
        expect(calls[i].texts.join('')).toBe(r.text);
      });
    } finally {
      await fake.close();
    }
  });

  test('a chunk of a shape the wire format does not allow fails the call, as the provider package would', async () => {
    server.play([oa({ role: 'assistant', content: 'ok' }), oa({ content: 42 }), 'data: [DONE]\n\n']);
    const err = await call({ provider: 'openai', baseUrl: server.url, apiKeyEnv: 'OPENAI_API_KEY' }).reply.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(classifyLlmError(err).retryable).toBe(true);
  });

  test('a redirect is not followed, streaming or not: the key never goes where the answer points', async () => {
    const elsewhere = await rawServer();
    try {
      for (const [wire, stream] of [['openai', true], ['anthropic', true], ['openai', false], ['anthropic', false]] as const) {
        server.play([], 307, { location: `${elsewhere.url}/${wire === 'openai' ? 'chat/completions' : 'messages'}` });
        const err = await call({ provider: wire, baseUrl: server.url, apiKeyEnv: wire === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY', stream }).reply.catch((e: unknown) => e);
        expect(classifyLlmError(err)).toMatchObject({ type: 'LlmBadRequest', retryable: false });
      }
      expect(server.requests.slice(-4).map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/messages', '/v1/chat/completions', '/v1/messages']);
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });

  test('an abort mid-stream ends the call at once as an AbortError', async () => {
    const aborter = new AbortController();
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    server.play([oa({ role: 'assistant', content: 'Start' }), () => held, 'data: [DONE]\n\n']);
    const run = call({ provider: 'openai', baseUrl: server.url, apiKeyEnv: 'OPENAI_API_KEY' }, aborter.signal);
    while (run.texts.length === 0) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    aborter.abort();
    const err = await run.reply.catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(1_000);
    release();
  });
});
