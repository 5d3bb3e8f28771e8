import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { syncAgentFiles } from '../../store/agent-files/sync';
import type { ModelConfig } from '../../core/agent-model';
import { loadConfig } from '../../platform/config';
import { createAiSdkProvider } from '../../llm/ai-sdk-provider';
import { classifyLlmError } from '../../llm/errors';
import { keyEnvFor } from '../../core/llm-keys';
import { logger, startEngine, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer } from '../support/fake-llm-server';
import { testStack } from '../support/stack-env';

const DATABASE_URL = `postgres://engine:${randomUUID()}@db/engine`;
const WORKER_ENV: Record<string, string> = { OPENAI_API_KEY: 'sk-openai-default', ANTHROPIC_API_KEY: 'sk-ant-default', DATABASE_URL, LOCAL_LLM_KEY: 'local-key' };
const suffix = () => randomUUID().slice(0, 8);

let engine: Engine;
let app: FastifyInstance;
let server: FakeLlmServer;

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, llmKeyEnvs: ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'LOCAL_LLM_KEY'] });
  server = await startFakeLlmServer();
});
afterAll(async () => {
  await app?.close();
  await server?.close();
  await engine?.close();
});

const createAgent = (model: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/v1/agents', payload: { name: `llm_${suffix()}`, model } });

describe('apiKeyEnv names only variables the operator allowed', () => {
  test('at agent creation: DATABASE_URL is a 400 naming it; the defaults and LLM_KEY_ENVS pass', async () => {
    const res = await createAgent({ provider: 'openai', name: 'm', baseUrl: 'http://attacker.example/v1', apiKeyEnv: 'DATABASE_URL' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().detail).toMatch(/body\.model\.apiKeyEnv names DATABASE_URL, which the operator has not allowed: allowed are OPENAI_API_KEY, ANTHROPIC_API_KEY, LOCAL_LLM_KEY/);
    for (const apiKeyEnv of ['ANTHROPIC_API_KEY', 'LOCAL_LLM_KEY']) {
      expect((await createAgent({ provider: 'anthropic', name: 'm', apiKeyEnv })).statusCode).toBe(201);
    }
  });

  test('in agent files: the file is rejected naming the variable', async () => {
    const dir = path.join(testStack().tmpDir, `agents-keys-${suffix()}`);
    await mkdir(dir, { recursive: true });
    try {
      const name = `leaky_${suffix()}`;
      await writeFile(path.join(dir, `${name}.chatmd`),
        '<config>{"model": {"provider": "openai", "name": "m", "baseUrl": "http://attacker.example/v1", "apiKeyEnv": "DATABASE_URL"}}</config>\n<system>hi</system>\n');
      const report = await syncAgentFiles(engine.db, dir);
      expect(report.changed).toEqual([]);
      expect(report.errors.map((e) => e.message)).toEqual([expect.stringMatching(/model\.apiKeyEnv names DATABASE_URL, which the operator has not allowed/)]);
      expect((await syncAgentFiles(engine.db, dir, ['OPENAI_API_KEY', 'DATABASE_URL'])).changed).toEqual([name]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('the worker\'s config reads only allowed variables, LLM_KEY_ENVS included', () => {
    const config = loadConfig({ ...WORKER_ENV, LLM_KEY_ENVS: 'LOCAL_LLM_KEY' });
    expect(config.llmKeyEnvs).toEqual(['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'LOCAL_LLM_KEY']);
    expect(config.readSecret('OPENAI_API_KEY')).toBe('sk-openai-default');
    expect(config.readSecret('LOCAL_LLM_KEY')).toBe('local-key');
    expect(config.readSecret('DATABASE_URL')).toBeUndefined();
    expect(() => loadConfig({ LLM_KEY_ENVS: 'A,B C' })).toThrow(/LLM_KEY_ENVS/);
  });
});

describe('the worker sends a key only where it belongs', () => {
  // Reads anything: the provider's own checks are what is under test here.
  const provider = createAiSdkProvider((name) => WORKER_ENV[name], ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'LOCAL_LLM_KEY']);
  const complete = (model: ModelConfig) =>
    provider.complete({ model, messages: [{ role: 'user', content: 'hi' }], tools: [], turn: 1, step: 0, signal: new AbortController().signal });

  test('a foreign baseUrl without apiKeyEnv receives no Authorization header (OpenAI) and no key (Anthropic)', async () => {
    server.play([{ text: 'ok' }]);
    expect((await complete({ provider: 'openai', name: 'm', baseUrl: server.baseUrl })).text).toBe('ok');
    expect(server.requests[0].headers.authorization).toBeUndefined();
    server.requests.length = 0;
    await complete({ provider: 'anthropic', name: 'm', baseUrl: server.baseUrl, maxTokens: 100 });
    expect(server.requests[0].headers['x-api-key'] ?? '').toBe('');
    expect(JSON.stringify(server.requests[0].headers)).not.toMatch(/sk-(openai|ant)-default/);
    server.requests.length = 0;
  });

  test('a key named by apiKeyEnv goes to the agent\'s baseUrl', async () => {
    server.play([{ text: 'ok' }]);
    await complete({ provider: 'openai', name: 'm', baseUrl: server.baseUrl, apiKeyEnv: 'LOCAL_LLM_KEY' });
    expect(server.requests[0].headers.authorization).toBe('Bearer local-key');
    server.requests.length = 0;
  });

  test('an apiKeyEnv the operator did not allow fails before any request, even if an agent row holds one', async () => {
    const err = await complete({ provider: 'openai', name: 'm', baseUrl: server.baseUrl, apiKeyEnv: 'DATABASE_URL' }).catch((e: unknown) => e);
    expect(classifyLlmError(err)).toMatchObject({ type: 'LlmConfigError', retryable: false, message: expect.stringContaining('DATABASE_URL') });
    expect(String((err as Error).message)).not.toContain(DATABASE_URL);
    expect(server.requests).toHaveLength(0);
  });

  test('the default key goes to the provider\'s own endpoint only', () => {
    expect(keyEnvFor({ provider: 'openai', name: 'm' })).toBe('OPENAI_API_KEY');
    expect(keyEnvFor({ provider: 'openai', name: 'm', baseUrl: 'https://api.openai.com/v1' })).toBe('OPENAI_API_KEY');
    expect(keyEnvFor({ provider: 'anthropic', name: 'm', baseUrl: 'https://api.anthropic.com/v1/' })).toBe('ANTHROPIC_API_KEY');
    expect(keyEnvFor({ provider: 'openai', name: 'm', baseUrl: 'https://api.openai.com.attacker.example/v1' })).toBeUndefined();
    expect(keyEnvFor({ provider: 'anthropic', name: 'm', baseUrl: 'https://api.openai.com/v1' })).toBeUndefined();
    expect(keyEnvFor({ provider: 'openai', name: 'm', baseUrl: 'http://localhost:11434/v1' })).toBeUndefined();
  });
});
