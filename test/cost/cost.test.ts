import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import type { ModelConfig } from '../../core/agent-model';
import type { PriceTable } from '../../core/pricing';
import { createProviders } from '../../llm/providers';
import { readPriceTable } from '../../platform/prices-file';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { insertIntegration } from '../../store/integrations/integrations';
import { ROOT } from '../support/processes';
import { subAgentToolName } from '../../core/sub-agents';
import { readRun } from '../../use-cases/runs/runs';
import { logger, startEngine, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer, type Step } from '../support/fake-llm-server';

/**
 * What runs cost (docs/observability.md, Cost): the worker prices each turn from the operator's
 * table when the turn ends (cached input at its own price), the run object sums its turns (and its
 * sub-agents' runs'), an unpriced model says so rather than counting as free, and GET /v1/usage
 * groups the spend. The LLMs are a local server speaking OpenAI's and Anthropic's wire formats.
 */

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

const PRICES: PriceTable = {
  openai: { 'gpt-priced': { inputPerMillion: 2, outputPerMillion: 8, cachedInputPerMillion: 0.5 } },
  scripted: { scripted: { inputPerMillion: 3, outputPerMillion: 15 } },
};

let engine: Engine;
let server: FakeLlmServer;
let app: FastifyInstance;

beforeAll(async () => {
  server = await startFakeLlmServer();
  engine = await startEngine('embedded', {
    prices: PRICES,
    providers: createProviders({ readApiKey: (name) => (name === 'FAKE_LLM_KEY' ? 'fake-key' : undefined), allowedKeyEnvs: ['FAKE_LLM_KEY'], logger }),
  });
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0 });
});
afterAll(async () => {
  await app?.close();
  await engine?.close();
  await server?.close();
});

async function runOf(model: ModelConfig, steps: Step[] = []): Promise<{ runId: string; agentId: string }> {
  server.play(steps);
  const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model });
  const thread = await insertThread(engine.db, agent.id);
  const runId = await engine.start({ threadId: thread.id, input: 'What does it cost?' });
  await engine.result(runId);
  return { runId, agentId: agent.id };
}

const remote = (provider: 'openai' | 'anthropic', name: string) =>
  ({ provider, name, baseUrl: server.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY', stream: provider === 'anthropic' }) as ModelConfig;

/** The run's turns as stored: what a price × tokens must come to. */
async function turnsOf(runId: string) {
  const { rows } = await engine.db.query<{ input: number; output: number; cached: number; cost: string | null }>(
    'SELECT input_tokens AS input, output_tokens AS output, cached_input_tokens AS cached, cost_usd AS cost FROM run_turns WHERE run_id = $1 ORDER BY turn',
    [runId]);
  return rows;
}

test('a run\'s cost is the sum of its turns\' usage × price, cached input at its own price', async () => {
  const { runId } = await runOf(remote('openai', 'gpt-priced'), [
    { toolCalls: [{ id: 'call_1', name: 'nothing', args: {} }], usage: { input: 1000, output: 100, cached: 400 } },
    { text: 'Cheap.', usage: { input: 2000, output: 50 } },
  ]);
  expect(await turnsOf(runId)).toMatchObject([{ input: 1000, output: 100, cached: 400 }, { input: 2000, output: 50, cached: 0 }]);
  // ((1000 − 400) × 2 + 400 × 0.5 + 100 × 8 + 2000 × 2 + 50 × 8) / 10⁶
  const run = await readRun(engine.db, runId);
  expect(run?.cost.priced).toBe(true);
  expect(run?.cost.usd).toBeCloseTo(0.0066, 10);
  expect(run?.costWithChildren).toEqual(run?.cost);
});

test('an unpriced model is flagged, never counted as zero spent', async () => {
  const { runId } = await runOf(remote('anthropic', 'claude-unpriced'), [{ text: 'Who knows.', usage: { input: 500, output: 20, cached: 100 } }]);
  expect(await turnsOf(runId)).toMatchObject([{ input: 500, output: 20, cached: 100, cost: null }]);
  expect((await readRun(engine.db, runId))?.cost).toEqual({ usd: 0, priced: false });
});

test('a run with a sub-agent: cost is its own turns\', costWithChildren adds its child\'s', async () => {
  const child = await insertAgent(engine.db, { name: `child-${randomUUID().slice(0, 8)}`, description: 'answers', model: { provider: 'scripted', script: [{ text: 'the child answers at length' }] } });
  const parent = await insertAgent(engine.db, {
    name: `parent-${randomUUID().slice(0, 8)}`, subAgentIds: [child.id],
    model: { provider: 'scripted', script: [{ toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'go on' } }] }, { text: 'done: {{tool_results}}' }] },
  });
  const runId = await engine.start({ threadId: (await insertThread(engine.db, parent.id)).id, input: 'ask the child' });
  expect(await engine.result(runId)).toMatchObject({ status: 'completed' });
  const view = await readRun(engine.db, runId);
  const childRunId = view!.toolCalls[0].childRunId!;
  const priced = (turns: { input: number; output: number }[]) => turns.reduce((usd, t) => usd + (t.input * 3 + t.output * 15) / 1e6, 0);
  const own = priced(await turnsOf(runId));
  const ofChild = priced(await turnsOf(childRunId));
  expect(ofChild).toBeGreaterThan(0);
  expect(view?.cost.usd).toBeCloseTo(own, 12);
  expect(view?.costWithChildren).toEqual({ usd: expect.closeTo(own + ofChild, 12), priced: true });
});

test('an MCP server\'s sampling request answered by the run\'s model is priced like a turn and counts in the run\'s cost', async () => {
  const from = new Date().toISOString();
  const fixture = await insertIntegration(engine.db, {
    name: `sampler-${randomUUID().slice(0, 8)}`, sampling: 'allow',
    transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
  });
  const agent = await insertAgent(engine.db, {
    name: `sampling-${randomUUID().slice(0, 8)}`, integrationIds: [fixture.id],
    model: { provider: 'scripted', script: [
      { toolCalls: [{ name: `${fixture.name}__sample`, arguments: { topic: 'tides' } }] }, { text: 'salt and foam' }, { text: '{{tool_results}}' },
    ] },
  });
  const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'sample' });
  expect(await engine.result(runId)).toMatchObject({ status: 'completed', output: 'sampled (scripted, endTurn): salt and foam' });
  const { rows } = await engine.db.query<{ usage: { inputTokens: number; outputTokens: number }; cost: string; model: string }>(
    "SELECT usage, cost_usd AS cost, provider || '/' || model AS model FROM run_samplings WHERE run_id = $1", [runId]);
  expect(rows).toHaveLength(1);
  const sampled = (rows[0].usage.inputTokens * 3 + rows[0].usage.outputTokens * 15) / 1e6;
  expect(rows[0]).toMatchObject({ model: 'scripted/scripted' });
  expect(Number(rows[0].cost)).toBeCloseTo(sampled, 12);
  const turns = (await turnsOf(runId)).reduce((usd, t) => usd + (t.input * 3 + t.output * 15) / 1e6, 0);
  expect((await readRun(engine.db, runId))?.cost).toEqual({ usd: expect.closeTo(turns + sampled, 12), priced: true });
  // By agent: other suites' runs share this database and its scripted model.
  const usage = await app.inject({ method: 'GET', url: `/v1/usage?groupBy=agent&from=${encodeURIComponent(from)}` });
  expect(usage.json().groups).toContainEqual(expect.objectContaining({
    key: agent.id, turns: 2, samplings: 1, usd: expect.closeTo(turns + sampled, 12), priced: true,
  }));
});

test('GET /v1/threads/:id: cost sums the thread\'s runs\' turns, costWithChildren their sub-agents\' too, an unpriced run flags it', async () => {
  const child = await insertAgent(engine.db, { name: `tchild-${randomUUID().slice(0, 8)}`, description: 'answers', model: { provider: 'scripted', script: [{ text: 'the child says a great deal' }] } });
  const parent = await insertAgent(engine.db, {
    name: `tparent-${randomUUID().slice(0, 8)}`, subAgentIds: [child.id],
    model: { provider: 'scripted', script: [{ toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'go on' } }] }, { text: 'done' }] },
  });
  const other = await insertAgent(engine.db, { name: `tother-${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'also' }] } });
  const threadId = (await insertThread(engine.db, parent.id)).id;
  const first = await engine.start({ threadId, input: 'ask the child' });
  expect(await engine.result(first)).toMatchObject({ status: 'completed' });
  const second = await engine.start({ threadId, input: 'and you?', agentId: other.id });
  expect(await engine.result(second)).toMatchObject({ status: 'completed' });
  const childRunId = (await readRun(engine.db, first))!.toolCalls[0].childRunId!;
  const priced = (turns: { input: number; output: number }[]) => turns.reduce((usd, t) => usd + (t.input * 3 + t.output * 15) / 1e6, 0);
  const own = priced([...await turnsOf(first), ...await turnsOf(second)]);
  const ofChild = priced(await turnsOf(childRunId));
  expect(ofChild).toBeGreaterThan(0);
  const read = async () => (await app.inject({ method: 'GET', url: `/v1/threads/${threadId}` })).json();
  expect(await read()).toMatchObject({
    id: threadId, agentId: parent.id,
    cost: { usd: expect.closeTo(own, 12), priced: true }, costWithChildren: { usd: expect.closeTo(own + ofChild, 12), priced: true },
  });
  // The sub-agent's own thread counts its run alone.
  const childThread = (await readRun(engine.db, childRunId))!.threadId;
  expect((await app.inject({ method: 'GET', url: `/v1/threads/${childThread}` })).json().cost).toEqual({ usd: expect.closeTo(ofChild, 12), priced: true });
  // A run on an unpriced model: the thread says so, and its priced turns still add up.
  server.play([{ text: 'Priceless.', usage: { input: 10, output: 10 } }]);
  const unpriced = await insertAgent(engine.db, { name: `tunpriced-${randomUUID().slice(0, 8)}`, model: remote('anthropic', 'claude-unpriced') });
  await engine.result(await engine.start({ threadId, input: 'and you?', agentId: unpriced.id }));
  expect(await read()).toMatchObject({ cost: { usd: expect.closeTo(own, 12), priced: false }, costWithChildren: { priced: false } });
  // Another tenant's principal: no such thread. A new thread: nothing spent, which is priced.
  const tenant = (await app.inject({ method: 'POST', url: '/v1/tenants', payload: { name: `thr-${randomUUID().slice(0, 8)}` } })).json();
  const key = (await app.inject({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: 'reader', roles: ['read'] } })).json().key;
  expect((await app.inject({ method: 'GET', url: `/v1/threads/${threadId}`, headers: { authorization: `Bearer ${key}` } })).statusCode).toBe(404);
  const fresh = (await app.inject({ method: 'POST', url: '/v1/threads', payload: { agentId: other.id } })).json();
  expect(await (await app.inject({ method: 'GET', url: `/v1/threads/${fresh.id}` })).json()).toMatchObject({ cost: { usd: 0, priced: true } });
});

test('GET /v1/usage groups spend by model and by agent, flags unpriced groups, and refuses a bad range', async () => {
  const from = new Date().toISOString();
  const { agentId } = await runOf(remote('openai', 'gpt-priced'), [{ text: 'One.', usage: { input: 1_000_000, output: 0 } }]);
  await runOf(remote('anthropic', 'claude-unpriced'), [{ text: 'Two.', usage: { input: 10, output: 10 } }]);
  const byModel = await app.inject({ method: 'GET', url: `/v1/usage?groupBy=model&from=${encodeURIComponent(from)}` });
  expect(byModel.statusCode).toBe(200);
  const groups = byModel.json().groups as { key: string; usd: number; priced: boolean; turns: number }[];
  // This file's models alone: other suites' runs (the scripted model) share the database and the range.
  expect(groups.filter((g) => ['anthropic/claude-unpriced', 'openai/gpt-priced'].includes(g.key))).toEqual([
    expect.objectContaining({ key: 'anthropic/claude-unpriced', usd: 0, priced: false, turns: 1 }),
    expect.objectContaining({ key: 'openai/gpt-priced', usd: 2, priced: true, turns: 1, inputTokens: 1_000_000 }),
  ]);
  // The total is the groups' sum, and an unpriced group makes it unpriced.
  expect(byModel.json().total).toMatchObject({
    usd: expect.closeTo(groups.reduce((usd, g) => usd + g.usd, 0), 9), priced: false, turns: groups.reduce((n, g) => n + g.turns, 0),
  });
  const byAgent = await app.inject({ method: 'GET', url: `/v1/usage?groupBy=agent&from=${encodeURIComponent(from)}` });
  expect(byAgent.json().groups).toContainEqual(expect.objectContaining({ key: agentId, usd: 2, priced: true }));
  // Another tenant's principal sees its own tenant's spend alone; the default tenant answers as unknown to it.
  const tenant = (await app.inject({ method: 'POST', url: '/v1/tenants', payload: { name: `spend-${randomUUID().slice(0, 8)}` } })).json();
  const key = (await app.inject({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: 'reader', roles: ['read'] } })).json().key;
  const asTenant = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
  expect((await asTenant(`/v1/usage?groupBy=model&from=${encodeURIComponent(from)}`)).json()).toMatchObject({ groups: [], total: { turns: 0 } });
  expect((await asTenant('/v1/usage?tenantId=default')).statusCode).toBe(404);
  for (const query of ['from=yesterday', `from=${encodeURIComponent(new Date().toISOString())}&to=2000-01-01T00:00:00Z`, 'groupBy=colour']) {
    expect((await app.inject({ method: 'GET', url: `/v1/usage?${query}` })).statusCode).toBe(400);
  }
});

test('PRICES_FILE: a table that is not valid stops the worker\'s start with a message naming the file and the entry', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'prices-'));
  try {
    const file = path.join(dir, 'prices.json');
    await writeFile(file, JSON.stringify(PRICES));
    expect(await readPriceTable(file)).toEqual(PRICES);
    await writeFile(file, JSON.stringify({ openai: { 'gpt-4.1': { inputPerMillion: -1, outputPerMillion: 8 } } }));
    await expect(readPriceTable(file)).rejects.toThrow(new RegExp(`^PRICES_FILE ${file}: .*openai.*gpt-4\\.1.*inputPerMillion`));
    await writeFile(file, '{ not json');
    await expect(readPriceTable(file)).rejects.toThrow(/not JSON/);
    await expect(readPriceTable(path.join(dir, 'missing.json'))).rejects.toThrow(/ENOENT/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
