import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { ModelConfig } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { listEvents } from '../../store/runs/events';
import { runTurns } from '../../store/runs/turns';
import { insertThread } from '../../store/threads/threads';
import { createProviders } from '../../llm/providers';
import { toolResultText } from '../../core/tool-texts';
import { logger, startEngine, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer, type Step } from '../support/fake-llm-server';
import { ROOT } from '../support/processes';
import { waitFor } from '../support/wait';

describe('runs with a real LLM provider (a local server speaking the OpenAI and Anthropic wire formats)', () => {
  let engine: Engine;
  let server: FakeLlmServer;

  beforeAll(async () => {
    server = await startFakeLlmServer();
    engine = await startEngine('embedded', { providers: createProviders({
      readApiKey: (name) => (name === 'FAKE_LLM_KEY' ? 'fake-key' : undefined), allowedKeyEnvs: ['FAKE_LLM_KEY', 'NOT_SET_ANYWHERE'], logger,
    }) });
  });
  afterAll(async () => {
    await engine?.close();
    await server?.close();
  });

  async function run(model: Partial<ModelConfig> & { provider: 'openai' | 'anthropic' }, steps: Step[]) {
    server.play(steps);
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, instructions: 'Be brief.',
      model: { name: 'fake-model', baseUrl: server.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY', ...model } as ModelConfig,
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'Weather in Paris?' });
    return engine.result(runId);
  }

  test.each(['openai', 'anthropic'] as const)('%s: a tool call and an answer; usage per run is the sum of the turns', async (provider) => {
    const result = await run({ provider, stream: provider === 'anthropic' }, [
      { toolCalls: [{ id: 'call_x1', name: 'get_weather', args: { city: 'Paris' } }], usage: { input: 100, output: 20 } },
      { text: 'It is sunny.', usage: { input: 150, output: 5 } },
    ]);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'It is sunny.', turns: 2, usage: { inputTokens: 250, outputTokens: 25 } });
    expect(result.toolCalls).toMatchObject([{ id: 'call_x1', name: 'get_weather', type: 'unknown', status: 'error' }]);
    // The second turn sent the call and its result back under the same id.
    const second = JSON.stringify(server.requests[1].body);
    expect(second).toContain('call_x1');
    expect(second).toContain(JSON.stringify(toolResultText.unknownTool('get_weather')).slice(1, -1));
    expect(server.requests[0].headers[provider === 'openai' ? 'authorization' : 'x-api-key']).toContain('fake-key');
  });

  test('every turn of a later run on the thread sends the earlier runs\' messages, then its own', async () => {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, model: { provider: 'openai', name: 'fake-model', baseUrl: server.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY' } as ModelConfig,
    });
    const thread = await insertThread(engine.db, agent.id);
    server.play([{ text: 'First answer.' }]);
    expect(await engine.result(await engine.start({ threadId: thread.id, input: 'First question' }))).toMatchObject({ status: 'completed' });
    server.play([{ toolCalls: [{ id: 'call_h1', name: 'get_weather', args: {} }] }, { text: 'Second answer.' }]);
    expect(await engine.result(await engine.start({ threadId: thread.id, input: 'Second question' }))).toMatchObject({ status: 'completed', turns: 2 });
    const contents = (i: number) => (server.requests[i].body as { messages: { content: unknown }[] }).messages.map((m) => JSON.stringify(m.content));
    for (const i of [0, 1]) {
      const seen = contents(i).join('\n');
      expect(seen.indexOf('First question')).toBeGreaterThanOrEqual(0);
      expect(seen.indexOf('First answer.')).toBeGreaterThan(seen.indexOf('First question'));
      expect(seen.indexOf('Second question')).toBeGreaterThan(seen.indexOf('First answer.'));
    }
    // The second turn has the first turn's call after the history.
    const secondTurn = JSON.stringify(server.requests[1].body);
    expect(secondTurn.indexOf('call_h1')).toBeGreaterThan(secondTurn.indexOf('Second question'));
  });

  test('NUL characters in the reply\'s text, tool name and arguments are stored as U+FFFD: no retry, the run completes', async () => {
    const result = await run({ provider: 'openai' }, [
      { text: 'thinking\u0000', toolCalls: [{ id: 'call_nul', name: 'get\u0000weather', args: { city: 'Par\u0000is' } }] },
      { text: 'It is\u0000sunny.' },
    ]);
    expect(result).toMatchObject({ status: 'completed', output: 'It is\ufffdsunny.', turns: 2 });
    expect(server.requests).toHaveLength(2);
    expect(result.toolCalls).toMatchObject([{ id: 'call_nul', name: 'get\ufffdweather', status: 'error' }]);
    // The second turn saw the first one's reply, with the replacement character.
    const second = JSON.stringify(server.requests[1].body);
    expect(second).toContain('Par\ufffdis');
    expect(second).toContain('thinking\ufffd');
    expect(second).not.toContain('u0000');
  });

  test('401 fails the run at once with LlmAuthError and the provider\'s message', async () => {
    const result = await run({ provider: 'openai' }, [{ status: 401, body: { error: { message: 'Incorrect API key provided' } } }]);
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', error: { type: 'LlmAuthError', message: 'LLM provider answered 401: Incorrect API key provided' } });
    expect(server.requests).toHaveLength(1);
  });

  test('a context-length error is reported as one, without retries', async () => {
    const result = await run({ provider: 'anthropic' }, [
      { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } } },
    ]);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ type: 'LlmContextLength' });
    expect(result.error?.message).toContain('prompt is too long');
    expect(server.requests).toHaveLength(1);
  });

  test('429 with Retry-After: Temporal retries after the delay the server asked for, not the policy\'s 2 s', async () => {
    const result = await run({ provider: 'openai' }, [
      { status: 429, headers: { 'retry-after': '4' }, body: { error: { message: 'Rate limit reached' } } },
      { text: 'Done.' },
    ]);
    expect(result).toMatchObject({ status: 'completed', output: 'Done.' });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1].at - server.requests[0].at).toBeGreaterThanOrEqual(3_900);
  }, 60_000);

  test('a first turn retried after the LLM failed reuses the run\'s recorded preparation: same tools, one run_started', async () => {
    const integration = await insertIntegration(engine.db, {
      name: `fixture-${randomUUID().slice(0, 8)}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts')], cwd: ROOT },
    });
    server.play([{ status: 503, headers: { 'retry-after': '3' }, body: { error: { message: 'Overloaded' } } }, { text: 'Done.' }]);
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [integration.id],
      model: { provider: 'openai', name: 'fake-model', baseUrl: server.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY' },
    });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    // Discovery found the integration. Disabled now, a new discovery would offer none of its tools.
    await waitFor(async () => server.requests.length === 1, 30_000, 'the first request');
    await engine.db.query('UPDATE integrations SET enabled = false WHERE id = $1', [integration.id]);

    expect(await engine.result(runId)).toMatchObject({ status: 'completed', output: 'Done.', turns: 1 });
    const toolNames = (i: number) => (server.requests[i].body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(toolNames(0)).toContain(`${integration.name}__echo`);
    expect(toolNames(1)).toEqual(toolNames(0));
    expect((await listEvents(engine.db, runId)).filter((e) => e.type === 'run_started')).toHaveLength(1);
    expect(await runTurns(engine.db, runId)).toEqual([{ turn: 1, attempts: 2, completed: true }]);
  }, 60_000);

  test('a missing key named by apiKeyEnv fails the run with a clear error, and no request is made', async () => {
    const result = await run({ provider: 'openai', apiKeyEnv: 'NOT_SET_ANYWHERE' }, [{ text: 'never' }]);
    expect(result.error).toMatchObject({ type: 'LlmConfigError' });
    expect(result.error?.message).toContain('set NOT_SET_ANYWHERE');
    expect(server.requests).toHaveLength(0);
  });
});
