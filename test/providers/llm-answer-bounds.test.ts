import { randomUUID } from 'node:crypto';
import type { ModelConfig } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { createProviders } from '../../llm/providers';
import { logger, startEngine, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer, type Step } from '../support/fake-llm-server';

/**
 * A model's answer is bounded (LLM_MAX_TEXT_BYTES, LLM_MAX_TOOL_ARGUMENT_BYTES, LLM_MAX_ANSWER_BYTES,
 * LLM_MAX_TOOL_CALLS_PER_ANSWER, at their defaults here): an answer past a bound fails its run at once, with the bound named, the
 * stream read no further, and the worker goes on serving runs.
 */
describe('an LLM answer past its bounds', () => {
  let engine: Engine;
  let server: FakeLlmServer;

  beforeAll(async () => {
    server = await startFakeLlmServer();
    engine = await startEngine('embedded', { providers: createProviders({
      readApiKey: (name) => (name === 'FAKE_LLM_KEY' ? 'fake-key' : undefined), allowedKeyEnvs: ['FAKE_LLM_KEY'], logger,
    }) });
  });
  afterAll(async () => {
    await engine?.close();
    await server?.close();
  });

  async function run(steps: Step[], stream = true) {
    server.play(steps);
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`,
      model: { provider: 'openai', name: 'fake-model', baseUrl: server.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY', stream } as ModelConfig,
    });
    const thread = await insertThread(engine.db, agent.id);
    return engine.result(await engine.start({ threadId: thread.id, input: 'Go on.' }));
  }

  /** The same worker still answers: it was not taken down by the answer before. */
  async function nextRunCompletes() {
    expect(await run([{ text: 'Fine.' }])).toMatchObject({ status: 'completed', output: 'Fine.' });
  }

  test.each([
    ['text', 'more than 1048576 bytes of text (LLM_MAX_TEXT_BYTES)'],
    ['toolArguments', 'more than 1048576 bytes of arguments in one tool call (LLM_MAX_TOOL_ARGUMENT_BYTES)'],
  ] as const)('an endless stream of %s fails the run after one request, read no further than the bound', async (endless, bound) => {
    const result = await run([{ endless }, { text: 'never' }]);
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', error: { type: 'LlmAnswerTooLarge', message: `The model's answer exceeded its bound: ${bound}` } });
    expect(server.requests).toHaveLength(1);
    // The engine stopped reading: the server saw it go before its own cap.
    expect(server.requests[0].endedBy).toBe('client');
    await nextRunCompletes();
  }, 60_000);

  test.each([
    ['a body past LLM_MAX_ANSWER_BYTES is not read to its end', 12 * 1024 * 1024, 'more than 8388608 bytes in all (LLM_MAX_ANSWER_BYTES)'],
    ['a body within it, with more text than LLM_MAX_TEXT_BYTES', 2 * 1024 * 1024, 'more than 1048576 bytes of text (LLM_MAX_TEXT_BYTES)'],
  ] as const)('a JSON answer: %s', async (_, bytes, bound) => {
    const result = await run([{ text: 'y'.repeat(bytes) }, { text: 'never' }], false);
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', error: { type: 'LlmAnswerTooLarge', message: `The model's answer exceeded its bound: ${bound}` } });
    expect(server.requests).toHaveLength(1);
    await nextRunCompletes();
  }, 60_000);

  test.each([true, false])('20,000 tool calls in one answer fail the run at LLM_MAX_TOOL_CALLS_PER_ANSWER, after one request (streamed: %s)', async (stream) => {
    const calls = Array.from({ length: 20_000 }, (_, i) => ({ id: `c${i}`, name: 'x', args: {} }));
    const result = await run([{ toolCalls: calls }, { text: 'never' }], stream);
    expect(result).toMatchObject({
      status: 'failed', stopReason: 'error',
      error: { type: 'LlmAnswerTooLarge', message: 'The model\'s answer exceeded its bound: more than 10000 tool calls (LLM_MAX_TOOL_CALLS_PER_ANSWER)' },
    });
    expect(server.requests).toHaveLength(1);
    await nextRunCompletes();
  }, 120_000);
});
