import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { PrefixSnapshot } from '../../activities/run-snapshots';
import type { ModelConfig } from '../../core/agent-model';
import type { Integration } from '../../core/integration';
import { syncAgentFiles } from '../../store/agent-files/sync';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { listEvents } from '../../store/runs/events';
import { getSnapshot } from '../../store/runs/snapshots';
import { insertThread } from '../../store/threads/threads';
import type { Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { testStack } from '../support/stack-env';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-prompts-server.ts');
const suffix = () => randomUUID().slice(0, 8);
const scripted: ModelConfig = { provider: 'scripted', script: [{ text: 'ok' }] };

describe('the order of conventional prompts (promptOrder) and the prefix\'s tokens', () => {
  let engine: Engine;
  let app: FastifyInstance;
  /** three servers, each serving one system_prompt: "Instructions of alpha." and so on */
  let alpha: Integration;
  let beta: Integration;
  let gamma: Integration;
  const labels = new Map<string, string>();

  const inject = (options: InjectOptions) => app.inject(options);
  const problem = (res: LightMyRequestResponse) => {
    expect([res.statusCode, res.headers['content-type']]).toEqual([400, expect.stringContaining('application/problem+json')]);
    return res.json().detail as string;
  };
  const systemServer = async (label: string) => {
    const integration = await insertIntegration(engine.db, {
      name: `${label}-${suffix()}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, env: { PROMPTS_MODE: 'system', PROMPT_LABEL: label } },
    });
    labels.set(integration.id, label);
    return integration;
  };
  const part = (i: Integration) => `[System instructions from Server: ${i.name}]\nInstructions of ${labels.get(i.id)}.`;
  const systemText = (first: Integration, second: Integration) => `${part(first)}\n\n---\n\n${part(second)}\n\n---\n\n[Thread System Prompt]\nAnswer in French.`;
  const prompt = (i: Integration) => ({ kind: 'prompt', integrationId: i.id, integrationName: i.name, prompt: 'system_prompt' });

  async function postAgent(payload: Record<string, unknown>) {
    return inject({ method: 'POST', url: '/v1/agents', payload: { name: `order_${suffix()}`, model: scripted, ...payload } });
  }

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    [alpha, beta, gamma] = await Promise.all(['alpha', 'beta', 'gamma'].map(systemServer));
  });
  afterAll(() => stopApiEngine({ engine, app }));

  test('the API takes integration names or ids, stores ids, and refuses entries that are not the agent\'s integrations', async () => {
    const created = await postAgent({ integrationIds: [alpha.name, beta.id], promptOrder: [beta.name] });
    expect(created.statusCode).toBe(201);
    const agent = created.json();
    expect(agent).toMatchObject({ integrationIds: [alpha.id, beta.id], promptOrder: [beta.id] });
    expect((await postAgent({})).json().promptOrder).toEqual([]);

    const on = { integrationIds: [alpha.id, beta.id] };
    expect(problem(await postAgent({ ...on, promptOrder: [gamma.name] }))).toBe(`body.promptOrder: ${gamma.name}: not among the agent's integrations`);
    expect(problem(await postAgent({ ...on, promptOrder: ['no-such-integration', alpha.id] })))
      .toBe('body.promptOrder: no-such-integration: not among the agent\'s integrations');
    expect(problem(await postAgent({ ...on, promptOrder: [beta.name, beta.id] }))).toBe(`body.promptOrder: ${beta.id}: names an integration named before it`);
    expect(problem(await postAgent({ ...on, promptOrder: [beta.name, beta.name] }))).toMatch(/promptOrder.*must not name an integration twice/);
    expect(problem(await postAgent({ ...on, promptOrder: Array.from({ length: 101 }, (_, i) => `i${i}`) }))).toMatch(/promptOrder/);
    expect(problem(await postAgent({ promptOrder: [alpha.id] }))).toBe(`body.promptOrder: ${alpha.id}: not among the agent's integrations`);

    const patch = (payload: Record<string, unknown>) => inject({ method: 'PATCH', url: `/v1/agents/${agent.id}`, payload });
    expect((await patch({ promptOrder: [alpha.id, beta.name] })).json().promptOrder).toEqual([alpha.id, beta.id]);
    // New integrations alone keep the entries still among them.
    expect((await patch({ integrationIds: [beta.id, gamma.name] })).json()).toMatchObject({ integrationIds: [beta.id, gamma.id], promptOrder: [beta.id] });
    expect(problem(await patch({ integrationIds: [alpha.id], promptOrder: [gamma.id] }))).toBe(`body.promptOrder: ${gamma.id}: not among the agent's integrations`);
    expect(problem(await patch({ promptOrder: [alpha.id] }))).toBe(`body.promptOrder: ${alpha.id}: not among the agent's integrations`);
    expect((await patch({ integrationIds: [alpha.id, gamma.id], promptOrder: [gamma.name, alpha.name] })).json().promptOrder).toEqual([gamma.id, alpha.id]);
    expect((await patch({ promptOrder: [] })).json().promptOrder).toEqual([]);
    expect((await inject({ method: 'GET', url: `/v1/agents/${agent.id}` })).json()).toMatchObject({ integrationIds: [alpha.id, gamma.id], promptOrder: [] });
  });

  test('an integration deleted after its agent was (the agent kept, disabled, for its thread) leaves its promptOrder too', async () => {
    const delta = await systemServer('delta');
    const agent = (await postAgent({ integrationIds: [alpha.id, delta.id], promptOrder: [delta.id, alpha.id] })).json();
    await insertThread(engine.db, agent.id);
    expect((await inject({ method: 'DELETE', url: `/v1/agents/${agent.id}` })).json().disabledAt).toEqual(expect.any(String));
    expect((await inject({ method: 'DELETE', url: `/v1/integrations/${delta.id}` })).statusCode).toBe(204);
    const { rows } = await engine.db.query('SELECT integration_ids, prompt_order FROM agents WHERE id = $1', [agent.id]);
    expect(rows[0]).toEqual({ integration_ids: [alpha.id], prompt_order: [alpha.id] });
  });

  test('the context preview and a run\'s prefix put promptOrder\'s integrations first; each message has its sources and tokens', async () => {
    const created = await postAgent({ integrationIds: [alpha.id, beta.id], promptOrder: [beta.name], instructions: 'Answer in French.' });
    const agent = created.json();
    const preview = async () => (await inject({ method: 'GET', url: `/v1/agents/${agent.id}/context` })).json();

    const content = systemText(beta, alpha);
    const tokens = Math.ceil(content.length / 4);
    expect(await preview()).toEqual({
      messages: [{ role: 'system', content, sources: [prompt(beta), prompt(alpha), { kind: 'instructions' }], tokens }],
      decisions: [beta, alpha].map((i) => ({ integrationId: i.id, integrationName: i.name, prompt: 'system_prompt', injected: true, reason: 'system_prompt is always injected' })),
      totalTokens: tokens, tokensEstimated: true, tokenizer: 'chars/4',
    });

    const threadId = (await insertThread(engine.db, agent.id)).id;
    const runId = await engine.start({ threadId, input: 'go' });
    expect(await engine.result(runId)).toMatchObject({ status: 'completed', output: 'ok' });
    expect((await getSnapshot<PrefixSnapshot>(engine.db, runId, 'prefix'))?.messages).toEqual([{ role: 'system', content }]);
    const started = (await listEvents(engine.db, runId)).find((e) => e.type === 'run_started');
    expect(started?.data.prefix).toMatchObject({ messageCount: 1, injectedPrompts: 2, tokens, tokensEstimated: true });

    // Without an order, the agent's integration order.
    expect((await inject({ method: 'PATCH', url: `/v1/agents/${agent.id}`, payload: { promptOrder: [] } })).statusCode).toBe(200);
    const unordered = await preview();
    expect(unordered.messages[0]).toMatchObject({ content: systemText(alpha, beta), sources: [prompt(alpha), prompt(beta), { kind: 'instructions' }] });
  }, 120_000);

  test('an OpenAI model\'s prefix is counted with its encoding', async () => {
    const context = async (model: ModelConfig, instructions: string) => {
      const agent = await insertAgent(engine.db, { name: `counted_${suffix()}`, model, instructions });
      return (await inject({ method: 'GET', url: `/v1/agents/${agent.id}/context` })).json();
    };
    // Figures from OpenAI's cookbook ("How to count tokens with tiktoken").
    expect(await context({ provider: 'openai', name: 'gpt-4' }, 'tiktoken is great!')).toEqual({
      messages: [{ role: 'system', content: 'tiktoken is great!', sources: [{ kind: 'instructions' }], tokens: 6 }], decisions: [],
      totalTokens: 6, tokensEstimated: false, tokenizer: 'cl100k_base',
    });
    expect(await context({ provider: 'openai', name: 'gpt-4o-mini' }, 'お誕生日おめでとう')).toMatchObject({ totalTokens: 8, tokensEstimated: false, tokenizer: 'o200k_base' });
    expect(await context({ provider: 'anthropic', name: 'claude-sonnet-4-5' }, 'お誕生日おめでとう')).toMatchObject({ totalTokens: 3, tokensEstimated: true, tokenizer: 'chars/4' });
  }, 60_000);

  test('an agent file\'s promptOrder is resolved when the file is synced; one naming another integration is reported', async () => {
    const dir = path.join(testStack().tmpDir, `order-files-${suffix()}`);
    await mkdir(dir, { recursive: true });
    const config = (promptOrder: string[]) => `<config>\n${JSON.stringify({ model: scripted, integrations: [alpha.name, beta.id], promptOrder })}\n</config>\n`;
    const good = `ordered_${suffix()}`;
    const bad = path.join(dir, `misordered_${suffix()}.chatmd`);
    try {
      await writeFile(path.join(dir, `${good}.chatmd`), config([beta.name, alpha.id]));
      await writeFile(bad, config([gamma.name]));
      const report = await syncAgentFiles(engine.db, dir);
      expect(report.changed).toEqual([good]);
      expect(report.errors.map((e) => e.message)).toEqual([`${bad}:1: promptOrder: ${gamma.name}: not among the agent's integrations`]);
      const agent = (await inject({ method: 'GET', url: `/v1/agents/${good}` })).json();
      expect(agent).toMatchObject({ integrationIds: [alpha.id, beta.id], promptOrder: [beta.id, alpha.id] });
    } finally {
      await rm(dir, { recursive: true, force: true });
      await syncAgentFiles(engine.db, dir).catch(() => undefined);
    }
  });
});
