import type { ModelConfig } from '../../core/agent-model';
import type { LlmAnswerBounds } from '../../core/llm-answer-bounds';
import { createAiSdkProvider } from '../../llm/ai-sdk-provider';
import { guardedHttp } from '../../platform/net/address-guard';
import { classifyLlmError } from '../../llm/errors';
import { waitFor } from '../support/wait';
import { startFakeLlmServer } from '../support/fake-llm-server';
import { an, oa, rawServer, sse, type RawServer, type Write } from '../support/raw-llm-server';

/**
 * A model's answer read within the worker's bounds (llm/answer-bounds.ts), in both wire formats:
 * past a bound the call fails with LlmAnswerTooLarge, not retryable, and the server sees the engine
 * stop reading; what came before reached the callbacks within the bound.
 */

const BOUNDS: LlmAnswerBounds = { textBytes: 4096, toolArgumentBytes: 4096, answerBytes: 32 * 1024, toolCalls: 100 };
const provider = createAiSdkProvider((name) => (name === 'OPENAI_API_KEY' ? 'sk-o' : 'sk-a'), ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'], guardedHttp(), BOUNDS);

/** As much as a server answering without end writes before it gives up (a net for the test machine). */
const CAP_WRITES = 4096;

/** The first writes, then `more` again and again (up to the cap), then the last ones. */
function* endless(first: string[], more: (i: number) => string, last: string[] = []): Generator<Write> {
  yield* first;
  for (let i = 0; i < CAP_WRITES; i++) yield more(i);
  yield* last;
}

const start = an('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 1 } } });
const anthropicEnd = [an('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }), an('message_stop')];
const piece = 'z'.repeat(1000);

function call(wire: 'openai' | 'anthropic', baseUrl: string, stream = true) {
  const texts: string[] = [];
  const inputs: string[] = [];
  const reply = provider.complete({
    model: { provider: wire, name: 'm', baseUrl, apiKeyEnv: wire === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY', stream } as ModelConfig,
    messages: [{ role: 'user', content: 'go' }], tools: [], turn: 1, step: 0, signal: new AbortController().signal,
    onText: (t) => texts.push(t), onToolInput: (_, t) => inputs.push(t),
  });
  return { reply, texts, inputs };
}

describe('a model\'s answer past the worker\'s bounds', () => {
  let server: RawServer;
  beforeAll(async () => { server = await rawServer(); });
  afterAll(async () => { await server?.close(); });

  async function tooLarge(wire: 'openai' | 'anthropic', setting: string, stream = true) {
    const run = call(wire, server.url, stream);
    const failure = classifyLlmError(await run.reply.catch((e: unknown) => e));
    expect(failure).toMatchObject({ type: 'LlmAnswerTooLarge', retryable: false });
    expect(failure.message).toContain(`(${setting})`);
    await waitFor(async () => server.requests.at(-1)?.clientLeft === true, 10_000, 'the engine to stop reading');
    return run;
  }

  test('Anthropic: endless text stops at LLM_MAX_TEXT_BYTES; the words handed on stay within it', async () => {
    server.play(endless([start, an('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })],
      () => an('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } }), anthropicEnd));
    const run = await tooLarge('anthropic', 'LLM_MAX_TEXT_BYTES');
    expect(run.texts.join('')).toBe(piece.repeat(4));
  });

  test('Anthropic: a tool call\'s endless input stops at LLM_MAX_TOOL_ARGUMENT_BYTES', async () => {
    server.play(endless([start, an('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get', input: {} } }),
      an('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"q":"' } })],
    () => an('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: piece } }), anthropicEnd));
    const run = await tooLarge('anthropic', 'LLM_MAX_TOOL_ARGUMENT_BYTES');
    expect(run.inputs.join('').length).toBeLessThanOrEqual(BOUNDS.toolArgumentBytes);
  });

  test('Anthropic: endless thinking stops at LLM_MAX_ANSWER_BYTES', async () => {
    server.play(endless([start, an('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } })],
      () => an('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: piece } }), anthropicEnd));
    await tooLarge('anthropic', 'LLM_MAX_ANSWER_BYTES');
  });

  test('OpenAI: tool calls without end, each small, stop at LLM_MAX_TOOL_CALLS_PER_ANSWER', async () => {
    server.play(endless([oa({ role: 'assistant', content: '' })],
      (i) => oa({ tool_calls: [{ index: i, id: `call_${i}`, type: 'function', function: { name: 'get', arguments: `{"n":${i}}` } }] })));
    await tooLarge('openai', 'LLM_MAX_TOOL_CALLS_PER_ANSWER');
  });

  test('OpenAI: tool calls numbered far apart are kept in their order, without a walk over the numbers between', async () => {
    server.play([
      oa({ role: 'assistant', content: '' }),
      oa({ tool_calls: [{ index: 4_000_000_000, id: 'call_far', type: 'function', function: { name: 'get', arguments: '{"n":2}' } }] }),
      oa({ tool_calls: [{ index: 0, id: 'call_near', type: 'function', function: { name: 'get', arguments: '{"n":1}' } }] }),
      oa({}, 'tool_calls'), 'data: [DONE]\n\n',
    ]);
    const reply = await call('openai', server.url).reply;
    expect(reply.toolCalls).toEqual([{ id: 'call_near', name: 'get', arguments: { n: 1 } }, { id: 'call_far', name: 'get', arguments: { n: 2 } }]);
  });

  test('OpenAI: a line without end stops at LLM_MAX_ANSWER_BYTES, without waiting for its end', async () => {
    server.play(endless([oa({ role: 'assistant', content: 'Hi' }), 'data: {"choices": [{"index": 0, "delta": {"content": "'], () => piece));
    await tooLarge('openai', 'LLM_MAX_ANSWER_BYTES');
  });

  test.each([true, false])('a JSON answer past LLM_MAX_ANSWER_BYTES is not read to its end (the request streams: %s)', async (stream) => {
    const body = JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'y'.repeat(4 * CAP_WRITES * 1000) } }] });
    server.play(endless([], (i) => body.slice(i * 4000, (i + 1) * 4000)), 200, { 'content-type': 'application/json' });
    await tooLarge('openai', 'LLM_MAX_ANSWER_BYTES', stream);
  });

  test.each([true, false])('an error\'s body past the bound is cut, and the error keeps its meaning (the request streams: %s)', async (stream) => {
    const message = 'Overloaded, try again';
    server.play(endless([`{"error": {"message": "${message}", "detail": "`], () => piece), 503, { 'content-type': 'application/json' });
    const failure = classifyLlmError(await call('openai', server.url, stream).reply.catch((e: unknown) => e));
    expect(failure).toMatchObject({ type: 'LlmServerError', retryable: true });
    await waitFor(async () => server.requests.at(-1)?.clientLeft === true, 10_000, 'the engine to stop reading');
  });

  test.each([
    ['openai', 'streamed', true], ['openai', 'a JSON answer', false], ['anthropic', 'streamed', true], ['anthropic', 'a JSON answer', false],
  ] as const)('%s, %s: as many tool calls as LLM_MAX_TOOL_CALLS_PER_ANSWER are read, one more fails the call', async (wire, _, stream) => {
    for (const n of [BOUNDS.toolCalls, BOUNDS.toolCalls + 1]) {
      const fake = await startFakeLlmServer();
      try {
        fake.play([{ toolCalls: Array.from({ length: n }, (__, i) => ({ id: `c${i}`, name: 'get', args: {} })) }]);
        const reply = await call(wire, fake.baseUrl, stream).reply.catch((e: unknown) => e);
        if (n === BOUNDS.toolCalls) expect((reply as { toolCalls: unknown[] }).toolCalls).toHaveLength(n);
        else expect(classifyLlmError(reply)).toMatchObject({ type: 'LlmAnswerTooLarge', message: expect.stringContaining('more than 100 tool calls (LLM_MAX_TOOL_CALLS_PER_ANSWER)') });
      } finally {
        await fake.close();
      }
    }
  });

  test('an answer at its bounds, to the byte, is read whole', async () => {
    const text = 'é'.repeat(BOUNDS.textBytes / 2);
    const args = `{"q":"${'a'.repeat(BOUNDS.toolArgumentBytes - 8)}"}`;
    server.play([
      oa({ role: 'assistant', content: text.slice(0, 100) }), oa({ content: text.slice(100) }),
      oa({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get', arguments: args } }] }),
      oa({}, 'tool_calls'), sse({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } }),
      'data: [DONE]\n\n',
    ]);
    const reply = await call('openai', server.url).reply;
    expect(reply.text).toBe(text);
    expect(reply.toolCalls).toEqual([{ id: 'call_a', name: 'get', arguments: JSON.parse(args) }]);
  });
});
