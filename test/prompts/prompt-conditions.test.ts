import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { PrefixSnapshot } from '../../activities/run-snapshots';
import type { ModelConfig } from '../../core/agent-model';
import type { Integration } from '../../core/integration';
import { syncAgentFiles } from '../../store/agent-files/sync';
import { insertIntegration } from '../../store/integrations/integrations';
import { getSnapshot } from '../../store/runs/snapshots';
import type { Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { testStack } from '../support/stack-env';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-prompts-server.ts');
const suffix = () => randomUUID().slice(0, 8);
const scripted: ModelConfig = { provider: 'scripted', script: [{ text: 'ok' }] };

describe('conditions on conventional prompts (promptWhen) and thread metadata', () => {
  let engine: Engine;
  let app: FastifyInstance;
  /** each serves system_prompt, tool_instructions and user_prompt naming its label */
  let docs: Integration;
  let extra: Integration;

  const inject = (options: InjectOptions) => app.inject(options);
  const problem = (res: LightMyRequestResponse) => {
    expect([res.statusCode, res.headers['content-type']]).toEqual([400, expect.stringContaining('application/problem+json')]);
    return res.json().detail as string;
  };
  const server = (label: string) => insertIntegration(engine.db, {
    name: `${label}-${suffix()}`,
    transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, env: { PROMPTS_MODE: 'conditional', PROMPT_LABEL: label } },
  });
  const postAgent = (payload: Record<string, unknown>) => inject({ method: 'POST', url: '/v1/agents', payload: { name: `cond_${suffix()}`, model: scripted, ...payload } });
  const postThread = (payload: Record<string, unknown>) => inject({ method: 'POST', url: '/v1/threads', payload });
  const patchThread = (id: string, payload: unknown) => inject({ method: 'PATCH', url: `/v1/threads/${id}`, payload: payload as Record<string, unknown> });
  const preview = async (agentId: string, threadId?: string) => {
    const res = await inject({ method: 'GET', url: `/v1/agents/${agentId}/context${threadId ? `?threadId=${threadId}` : ''}` });
    expect(res.statusCode).toBe(200);
    return res.json() as { messages: { role: string; content: string }[]; decisions: { integrationId: string; prompt: string | null; injected: boolean; reason: string }[] };
  };
  const injectedOf = (decisions: { integrationId: string; prompt: string | null; injected: boolean }[], i: Integration) =>
    decisions.filter((d) => d.integrationId === i.id && d.injected).map((d) => d.prompt);

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    [docs, extra] = await Promise.all([server('docs'), server('extra')]);
  });
  afterAll(() => stopApiEngine({ engine, app }));

  test('threads take metadata on create and patch, bounded; the answer shows it', async () => {
    const agent = (await postAgent({})).json();
    const created = await postThread({ agentId: agent.id, metadata: { tier: 'pro' } });
    expect(created.statusCode).toBe(201);
    const thread = created.json();
    expect(thread).toEqual({ id: expect.any(String), agentId: agent.id, metadata: { tier: 'pro' }, forkedFrom: null, createdAt: expect.any(String) });
    expect((await postThread({ agentId: agent.id })).json().metadata).toEqual({});

    const patched = await patchThread(thread.id, { metadata: { tier: 'free', lang: 'fr' } });
    expect([patched.statusCode, patched.json().metadata]).toEqual([200, { tier: 'free', lang: 'fr' }]);
    expect((await inject({ method: 'GET', url: `/v1/threads/${thread.id}` })).json().metadata).toEqual({ tier: 'free', lang: 'fr' });
    const listed = (await inject({ method: 'GET', url: `/v1/threads?agentId=${agent.id}` })).json().threads;
    expect(listed.find((t: { id: string }) => t.id === thread.id).metadata).toEqual({ tier: 'free', lang: 'fr' });

    expect(problem(await patchThread(thread.id, { metadata: { tier: 1 } }))).toMatch(/body\.metadata\.tier/);
    expect(problem(await patchThread(thread.id, { metadata: { 'a key': 'x' } }))).toMatch(/body\.metadata/);
    expect(problem(await patchThread(thread.id, { metadata: { big: 'x'.repeat(1025) } }))).toMatch(/body\.metadata\.big/);
    const many = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`k${i}`, 'v'.repeat(1000)]));
    expect(problem(await patchThread(thread.id, { metadata: many }))).toMatch(/4096 bytes/);
    expect(problem(await patchThread(thread.id, {}))).toMatch(/body\.metadata/);
    expect(problem(await postThread({ agentId: agent.id, metadata: ['x'] }))).toMatch(/body\.metadata/);
    const missing = await patchThread('thr_missing', { metadata: {} });
    expect(missing.statusCode).toBe(404);
    expect((await patchThread(thread.id, { metadata: {} })).json().metadata).toEqual({});
  });

  test('promptWhen is resolved to integration ids; other keys and bad conditions are refused', async () => {
    const created = await postAgent({ integrationIds: [docs.id, extra.name], promptWhen: { [docs.name]: { models: ['gpt-*'] } } });
    expect(created.statusCode).toBe(201);
    const agent = created.json();
    expect(agent.promptWhen).toEqual({ [docs.id]: { models: ['gpt-*'] } });

    const on = { integrationIds: [docs.id] };
    expect(problem(await postAgent({ ...on, promptWhen: { [extra.name]: { models: ['x'] } } }))).toBe(`body.promptWhen: ${extra.name}: not among the agent's integrations`);
    expect(problem(await postAgent({ ...on, promptWhen: { nope: { models: ['x'] } } }))).toBe('body.promptWhen: nope: not among the agent\'s integrations');
    expect(problem(await postAgent({ ...on, promptWhen: { [docs.id]: { models: ['x'] }, [docs.name]: { models: ['y'] } } })))
      .toMatch(/names an integration named before it/);
    expect(problem(await postAgent({ ...on, promptWhen: { [docs.id]: {} } }))).toMatch(/give models, threadMetadata or both/);
    expect(problem(await postAgent({ ...on, promptWhen: { [docs.id]: { models: 'gpt-*' } } }))).toMatch(/models/);
    expect(problem(await postAgent({ ...on, promptWhen: { [docs.id]: { threadMetadata: { tier: true } } } }))).toMatch(/threadMetadata\.tier/);

    const patch = (payload: Record<string, unknown>) => inject({ method: 'PATCH', url: `/v1/agents/${agent.id}`, payload });
    expect((await patch({ promptWhen: { [extra.name]: { threadMetadata: { tier: 'pro' } } } })).json().promptWhen)
      .toEqual({ [extra.id]: { threadMetadata: { tier: 'pro' } } });
    // New integrations alone keep the entries still among them.
    expect((await patch({ integrationIds: [docs.id] })).json().promptWhen).toEqual({});
    expect((await patch({ integrationIds: [docs.id, extra.id], promptWhen: { [docs.id]: { models: ['*'] } } })).json().promptWhen).toEqual({ [docs.id]: { models: ['*'] } });
    expect((await patch({ promptWhen: {} })).json().promptWhen).toEqual({});
    expect((await inject({ method: 'GET', url: `/v1/agents/${agent.id}/context?threadId=thr_missing` })).statusCode).toBe(404);
  });

  test('a models condition decides the optional prompts in the preview; system_prompt stays', async () => {
    const agent = (await postAgent({ integrationIds: [docs.id, extra.id], promptWhen: { [docs.name]: { models: ['gpt-*', 'claude-*'] }, [extra.id]: { models: ['scr*'] } } })).json();
    const { messages, decisions } = await preview(agent.id);
    expect(injectedOf(decisions, docs)).toEqual(['system_prompt']);
    expect(injectedOf(decisions, extra)).toEqual(['system_prompt', 'tool_instructions', 'user_prompt']);
    expect(decisions.filter((d) => d.integrationId === docs.id)).toEqual([
      expect.objectContaining({ prompt: 'system_prompt', injected: true, reason: 'system_prompt is always injected, whatever promptWhen says' }),
      expect.objectContaining({ prompt: 'tool_instructions', injected: false, reason: 'promptWhen not met: model scripted matches none of gpt-*, claude-*' }),
      expect.objectContaining({ prompt: 'user_prompt', injected: false, reason: 'promptWhen not met: model scripted matches none of gpt-*, claude-*' }),
    ]);
    expect(decisions.find((d) => d.integrationId === extra.id && d.prompt === 'user_prompt')?.reason).toBe('promptWhen met: model scripted matches scr*');
    expect(messages.map((m) => m.content)).toEqual([
      expect.stringMatching(/Instructions of docs\.[\s\S]*Instructions of extra\.[\s\S]*Tool notes of extra\./), 'Optional context of extra.',
    ]);
    expect(messages[0].content).not.toContain('Tool notes of docs');
  }, 120_000);

  test('a thread-metadata condition can add optional prompts, in the preview and a run, but never removes system_prompt', async () => {
    const agent = (await postAgent({ integrationIds: [docs.id], instructions: 'Be brief.', promptWhen: { [docs.id]: { threadMetadata: { tier: 'pro' } } } })).json();
    const pro = (await postThread({ agentId: agent.id, metadata: { tier: 'pro' } })).json();
    const free = (await postThread({ agentId: agent.id, metadata: { tier: 'free' } })).json();

    const system = `[System instructions from Server: ${docs.name}]\nInstructions of docs.`;
    const full = [
      { role: 'system', content: `${system}\n\n---\n\n[Tool instructions from Server: ${docs.name}]\nTool notes of docs.\n\n---\n\n[Thread System Prompt]\nBe brief.` },
      { role: 'user', content: 'Optional context of docs.' },
    ];
    const bare = [{ role: 'system', content: `${system}\n\n---\n\n[Thread System Prompt]\nBe brief.` }];

    const withPro = await preview(agent.id, pro.id);
    expect(withPro.messages.map(({ role, content }) => ({ role, content }))).toEqual(full);
    expect(withPro.decisions.find((d) => d.prompt === 'user_prompt')?.reason).toBe('promptWhen met: thread metadata tier is "pro"');
    const withFree = await preview(agent.id, free.id);
    expect(withFree.messages.map(({ role, content }) => ({ role, content }))).toEqual(bare);
    expect(withFree.decisions.find((d) => d.prompt === 'user_prompt')?.reason).toBe('promptWhen not met: thread metadata tier is "free", not "pro"');
    const withoutThread = await preview(agent.id);
    expect(withoutThread.messages.map(({ role, content }) => ({ role, content }))).toEqual(bare);

    const prefixOf = async (threadId: string) => {
      const runId = await engine.start({ threadId, input: 'go' });
      expect(await engine.result(runId)).toMatchObject({ status: 'completed', output: 'ok' });
      return (await getSnapshot<PrefixSnapshot>(engine.db, runId, 'prefix'))?.messages;
    };
    expect(await prefixOf(pro.id)).toEqual(full);
    expect(await prefixOf(free.id)).toEqual(bare);
    // Whatever a caller sets, the operator's system_prompt stays.
    expect((await patchThread(pro.id, { metadata: { tier: 'none', system_prompt: 'off' } })).statusCode).toBe(200);
    expect(await prefixOf(pro.id)).toEqual(bare);
  }, 180_000);

  test('an agent file\'s promptWhen is resolved when the file is synced; one naming another integration is reported', async () => {
    const dir = path.join(testStack().tmpDir, `cond-files-${suffix()}`);
    await mkdir(dir, { recursive: true });
    const config = (promptWhen: Record<string, unknown>) => `<config>\n${JSON.stringify({ model: scripted, integrations: [docs.name], promptWhen })}\n</config>\n`;
    const good = `conditioned_${suffix()}`;
    const bad = path.join(dir, `misplaced_${suffix()}.chatmd`);
    try {
      await writeFile(path.join(dir, `${good}.chatmd`), config({ [docs.name]: { models: ['gpt-*'] } }));
      await writeFile(bad, config({ [extra.name]: { models: ['gpt-*'] } }));
      const report = await syncAgentFiles(engine.db, dir);
      expect(report.changed).toEqual([good]);
      expect(report.errors.map((e) => e.message)).toEqual([`${bad}:1: promptWhen: ${extra.name}: not among the agent's integrations`]);
      expect((await inject({ method: 'GET', url: `/v1/agents/${good}` })).json().promptWhen).toEqual({ [docs.id]: { models: ['gpt-*'] } });
      // Synced again unchanged, nothing changes.
      expect((await syncAgentFiles(engine.db, dir)).unchanged).toEqual([good]);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await syncAgentFiles(engine.db, dir).catch(() => undefined);
    }
  });
});
