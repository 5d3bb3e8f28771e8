import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ModelConfig } from '../../core/agent-model';
import { createProviders } from '../../llm/providers';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { logger, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer } from '../support/fake-llm-server';
import { followSseText, sseEventsOf as eventsOf } from '../support/sse-text';

interface Delta { turn: number; attempt: number; text: string }

/**
 * A real provider's words as they stream (a local server speaking the OpenAI and Anthropic wire
 * formats), on the run's event stream; a retried attempt starts its text again with text_reset.
 */
describe('a streaming model\'s words on the run\'s event stream', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let server: FakeLlmServer;
  let url: string;

  beforeAll(async () => {
    server = await startFakeLlmServer();
    ({ engine, app } = await startApiEngine('embedded', {}, { providers: createProviders({
      readApiKey: (name) => (name === 'FAKE_LLM_KEY' ? 'fake-key' : undefined), allowedKeyEnvs: ['FAKE_LLM_KEY'], logger,
    }) }));
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await server?.close();
  });

  async function follow(provider: 'openai' | 'anthropic'): Promise<{ runId: string; sse: string }> {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, model: { provider, name: 'fake-model', baseUrl: server.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY', stream: true } as ModelConfig,
    });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    return { runId, sse: await followSseText(`${url}/v1/runs/${runId}/events`).text() };
  }

  test.each(['openai', 'anthropic'] as const)('%s: the pieces as they came, adding up to the answer', async (provider) => {
    server.play([{ text: 'Sunny in Paris today.' }]);
    const { runId, sse } = await follow(provider);
    const deltas = eventsOf<Delta>(sse, 'text_delta');
    expect(deltas.map((d) => d.text).join('')).toBe('Sunny in Paris today.');
    expect((await engine.result(runId)).output).toBe('Sunny in Paris today.');
  });

  test.each(['openai', 'anthropic'] as const)('%s: a tool call\'s arguments stream as tool_input_delta, adding up to them', async (provider) => {
    server.play([{ toolCalls: [{ id: 'call_s1', name: 'get_weather', args: { city: 'Bergen', days: 3 } }] }, { text: 'Rain.' }]);
    const { runId, sse } = await follow(provider);
    expect((await engine.result(runId)).output).toBe('Rain.');
    const inputs = eventsOf<Delta & { toolCallId: string }>(sse, 'tool_input_delta');
    expect(inputs.length).toBeGreaterThan(0);
    expect(inputs.every((d) => d.toolCallId === 'call_s1' && d.turn === 1)).toBe(true);
    expect(JSON.parse(inputs.map((d) => d.text).join(''))).toEqual({ city: 'Bergen', days: 3 });
  });

  test('a stream broken halfway is retried: text_reset, then the new attempt\'s words', async () => {
    server.play([{ text: 'First try, cut short', cutAfterChunks: 2 }, { text: 'Second try, whole.' }]);
    const { runId, sse } = await follow('openai');
    const result = await engine.result(runId);
    expect(result.output).toBe('Second try, whole.');
    const deltas = eventsOf<Delta>(sse, 'text_delta');
    const resets = eventsOf<{ turn: number; attempt: number }>(sse, 'text_reset');
    expect(resets).toEqual([expect.objectContaining({ turn: 1, attempt: 2 })]);
    expect(deltas.filter((d) => d.attempt === 1).map((d) => d.text).join('')).toBe('Fir');
    expect(deltas.filter((d) => d.attempt === 2).map((d) => d.text).join('')).toBe('Second try, whole.');
    expect(sse.indexOf('event: text_reset')).toBeLessThan(sse.indexOf('"attempt":2,"text"'));
  });
});
