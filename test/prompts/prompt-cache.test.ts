import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { PrefixSnapshot } from '../../activities/run-snapshots';
import type { ModelConfig } from '../../core/agent-model';
import type { Integration } from '../../core/integration';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { getSnapshot } from '../../store/runs/snapshots';
import { insertThread } from '../../store/threads/threads';
import type { Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { testStack } from '../support/stack-env';
import { logger } from '../support/engine';
import { loadIntegrationsFile } from '../../use-cases/integrations/integrations-file';
import { ConfigError } from '../../platform/config';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-prompts-server.ts');
const suffix = () => randomUUID().slice(0, 8);
const scripted: ModelConfig = { provider: 'scripted', script: [{ text: 'ok' }] };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the prompt cache (an integration\'s promptCacheTtl)', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let dir: string;

  const inject = (options: InjectOptions) => app.inject(options);

  /** a server whose user_prompt is the file's text; its prompts/get calls are counted in a file of their own */
  async function fileServer(promptCacheTtlMs: number | null) {
    const id = suffix();
    const promptFile = path.join(dir, `prompt-${id}.txt`);
    const countFile = path.join(dir, `count-${id}.txt`);
    await writeFile(promptFile, 'First text.');
    await writeFile(countFile, '');
    const integration = await insertIntegration(engine.db, {
      name: `cached-${id}`, promptCacheTtlMs,
      transport: {
        type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT,
        env: { PROMPTS_MODE: 'file', PROMPT_LABEL: 'cached', PROMPT_FILE: promptFile, COUNT_FILE: countFile },
      },
    });
    const agent = await insertAgent(engine.db, { name: `cache_${id}`, model: scripted, integrationIds: [integration.id] });
    const gets = async () => (await readFile(countFile, 'utf8')).split('\n').filter((l) => l === 'user_prompt').length;
    return { integration, agent, promptFile, gets };
  }
  const preview = async (agentId: string) => {
    const res = await inject({ method: 'GET', url: `/v1/agents/${agentId}/context` });
    expect(res.statusCode).toBe(200);
    return res.json() as { messages: { role: string; content: string }[]; decisions: { prompt: string; reason: string }[] };
  };
  const userText = async (agentId: string) => (await preview(agentId)).messages.find((m) => m.role === 'user')?.content;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    dir = path.join(testStack().tmpDir, `prompt-cache-${suffix()}`);
    await mkdir(dir, { recursive: true });
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await rm(dir, { recursive: true, force: true });
  });

  test('the API takes promptCacheTtl as a duration from 1s to 24h, shows it, and null turns it off', async () => {
    const transport = { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT };
    const created = await inject({ method: 'POST', url: '/v1/integrations', payload: { name: `ttl-${suffix()}`, transport, promptCacheTtl: '10m' } });
    expect([created.statusCode, created.json().promptCacheTtl]).toEqual([201, '10m']);
    const { id } = created.json() as Integration;
    const patch = (promptCacheTtl: unknown) => inject({ method: 'PATCH', url: `/v1/integrations/${id}`, payload: { promptCacheTtl } });
    expect((await patch('90s')).json().promptCacheTtl).toBe('90s');
    for (const bad of ['0s', '25h', 'ten minutes', 600]) {
      const res = await patch(bad);
      expect([res.statusCode, res.json().detail]).toEqual([400, expect.stringMatching(/body\.promptCacheTtl/)]);
    }
    expect((await patch(null)).json().promptCacheTtl).toBeNull();
    const plain = await inject({ method: 'POST', url: '/v1/integrations', payload: { name: `no-ttl-${suffix()}`, transport } });
    expect(plain.json().promptCacheTtl).toBeNull();
  });

  test('an import and INTEGRATIONS_FILE take promptCacheTtl as POST does: checked, stored, in effect, and null turns it off', async () => {
    const id = suffix();
    const promptFile = path.join(dir, `prompt-${id}.txt`);
    const countFile = path.join(dir, `count-${id}.txt`);
    await writeFile(promptFile, 'Imported text.');
    await writeFile(countFile, '');
    const server = (promptCacheTtl: unknown) => ({
      command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, promptCacheTtl,
      env: { PROMPTS_MODE: 'file', PROMPT_LABEL: 'imported', PROMPT_FILE: promptFile, COUNT_FILE: countFile },
    });
    const imported = `imported-${id}`;
    for (const bad of ['0s', '25h', 'ten minutes', 600]) {
      const res = await inject({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [imported]: server(bad) } } });
      expect([res.statusCode, res.json().detail]).toEqual([400, expect.stringContaining(`body.mcpServers.${imported}.promptCacheTtl must be a duration from 1s to 24h`)]);
    }
    const res = await inject({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [imported]: server('1h') } } });
    expect([res.statusCode, res.json().integrations[0].promptCacheTtl]).toEqual([201, '1h']);
    // In effect: the imported server's prompt is fetched once for two previews.
    const agent = await insertAgent(engine.db, { name: `cache_${id}`, model: scripted, integrationIds: [res.json().integrations[0].id] });
    expect([await userText(agent.id), await userText(agent.id)]).toEqual(['Imported text.', 'Imported text.']);
    expect((await readFile(countFile, 'utf8')).split('\n').filter((l) => l === 'user_prompt')).toHaveLength(1);
    const vsCode = await inject({ method: 'POST', url: '/v1/integrations/import', payload: { servers: { [`vs-${id}`]: { type: 'stdio', ...server(null) } } } });
    expect([vsCode.statusCode, vsCode.json().integrations[0].promptCacheTtl]).toEqual([201, null]);

    const file = path.join(dir, `integrations-${id}.json`);
    const fromFile = `file-${id}`;
    const load = async (promptCacheTtl: unknown) => {
      await writeFile(file, JSON.stringify({ mcpServers: { [fromFile]: { ...server(promptCacheTtl), promptCacheTtl } } }));
      return loadIntegrationsFile({ db: engine.db, file, env: {}, logger });
    };
    const ttlOf = async () => (await inject({ method: 'GET', url: `/v1/integrations/${fromFile}` })).json().promptCacheTtl as unknown;
    expect(await load('10m')).toMatchObject({ created: [fromFile] });
    expect(await ttlOf()).toBe('10m');
    expect(await load('10m')).toMatchObject({ unchanged: [fromFile] });
    expect(await load('90s')).toMatchObject({ updated: [fromFile] });
    expect(await ttlOf()).toBe('90s');
    expect(await load(undefined)).toMatchObject({ unchanged: [fromFile] });
    expect(await ttlOf()).toBe('90s');
    expect(await load(null)).toMatchObject({ updated: [fromFile] });
    expect(await ttlOf()).toBeNull();
    const err = await load('25h').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(`mcpServers.${fromFile}.promptCacheTtl must be a duration from 1s to 24h`);
  }, 60_000);

  test('a kept prompt is not asked for again, in previews and runs; without the setting, every time', async () => {
    const cached = await fileServer(3_600_000);
    expect(await userText(cached.agent.id)).toBe('First text.');
    const again = await preview(cached.agent.id);
    expect(again.messages.find((m) => m.role === 'user')?.content).toBe('First text.');
    expect(again.decisions.find((d) => d.prompt === 'user_prompt')?.reason).toBe('no promptWhen condition (kept from an earlier fetch: promptCacheTtl)');
    const threadId = (await insertThread(engine.db, cached.agent.id)).id;
    const runId = await engine.start({ threadId, input: 'go' });
    expect(await engine.result(runId)).toMatchObject({ status: 'completed' });
    expect((await getSnapshot<PrefixSnapshot>(engine.db, runId, 'prefix'))?.messages[1]).toEqual({ role: 'user', content: 'First text.' });
    expect(await cached.gets()).toBe(1);

    const uncached = await fileServer(null);
    await userText(uncached.agent.id);
    await userText(uncached.agent.id);
    expect(await uncached.gets()).toBe(2);
  }, 120_000);

  test('a kept prompt is asked for again once its TTL has passed', async () => {
    const { agent, gets } = await fileServer(1000);
    await userText(agent.id);
    await userText(agent.id);
    expect(await gets()).toBe(1);
    await sleep(1100);
    await userText(agent.id);
    expect(await gets()).toBe(2);
  }, 60_000);

  test('notifications/prompts/list_changed drops what was kept', async () => {
    const { agent, promptFile, gets } = await fileServer(3_600_000);
    expect(await userText(agent.id)).toBe('First text.');
    await writeFile(promptFile, 'Second text.');
    // The server notices the change within 50 ms and tells its client.
    let text: string | undefined;
    for (let i = 0; i < 50 && text !== 'Second text.'; i++) {
      await sleep(100);
      text = await userText(agent.id);
    }
    expect(text).toBe('Second text.');
    expect(await gets()).toBe(2);
  }, 60_000);
});
