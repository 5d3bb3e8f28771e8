import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../../api/app';
import type { ModelConfig, ScriptStep } from '../../core/agent-model';
import type { PriceTable } from '../../core/pricing';
import { createProviders } from '../../llm/providers';
import { createScriptedProvider } from '../../llm/scripted';
import { ApiMetrics } from '../../platform/metrics/api-metrics';
import { startMetricsServer, type MetricsServer } from '../../platform/metrics/metrics-server';
import { WorkerMetrics } from '../../platform/metrics/worker-metrics';
import { insertAgent } from '../../store/agents';
import { migrate } from '../../store/migrations';
import { countWaitingRuns } from '../../store/runs/waiting-runs';
import { insertTenant } from '../../store/tenants';
import { insertThread } from '../../store/threads/threads';
import { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import { operatorCaller } from '../../use-cases/caller';
import { startRun } from '../../use-cases/runs/start-run';
import { logger, startEngine, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer } from '../support/fake-llm-server';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { sample, scrape } from '../support/metrics-scrape';
import { waitFor } from '../support/wait';
import { ownDatabase } from '../support/own-database';

/*
 * The worker's LLM turn metrics (turns, tokens, cost, first token, stream lag), its MCP connections
 * and the API's runs waiting, scraped over HTTP. A database of this file's own: runs_waiting counts
 * every run of the database, and other test files' runs must not move it.
 */
const database = ownDatabase('turn_metrics');
const { url: dbUrl } = database;

const PRICES: PriceTable = { openai: { 'gpt-metrics': { inputPerMillion: 2, outputPerMillion: 8, cachedInputPerMillion: 0.5 } } };

let engine: Engine;
let app: FastifyInstance;
let llm: FakeLlmServer;
const servers: MetricsServer[] = [];
let apiUrl: string;
let workerUrl: string;

beforeAll(async () => {
  await database.create();
  llm = await startFakeLlmServer();
  const workerMetrics = new WorkerMetrics({ maxLabelValues: 100, mcpConnections: () => engine.mcpPool()?.openConnections() ?? [] });
  const providers = {
    ...createProviders({ readApiKey: (name) => (name === 'FAKE_LLM_KEY' ? 'fake-key' : undefined), allowedKeyEnvs: ['FAKE_LLM_KEY'], logger }),
    scripted: createScriptedProvider(),
  };
  engine = await startEngine('external', { databaseUrl: dbUrl, worker: false, metrics: workerMetrics, prices: PRICES, providers });
  await migrate(engine.db);
  await engine.startWorker();
  const apiMetrics = new ApiMetrics({ maxLabelValues: 100, waitingRuns: () => countWaitingRuns(engine.db) });
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, metrics: apiMetrics });
  for (const registry of [apiMetrics.registry, workerMetrics.registry]) servers.push(await startMetricsServer({ host: '127.0.0.1', port: 0, registry }));
  [apiUrl, workerUrl] = servers.map((s) => s.url);
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await app?.close();
  await engine?.close();
  await llm?.close();
  await database.drop();
});

const inject = async (options: InjectOptions) => {
  const res = await app.inject(options);
  expect(res.statusCode).toBeLessThan(300);
  return res.json();
};

/** A run of an agent with this model, in the tenant given (default: `default`), to its end. */
async function runOf(model: ModelConfig, tenantId = 'ten_default', integrationIds: string[] = []) {
  const agent = await insertAgent(engine.db, { tenantId, name: `agent-${randomUUID().slice(0, 8)}`, model, integrationIds });
  const thread = await insertThread(engine.db, agent.id, {}, tenantId);
  const searchAttributes = new SearchAttributeGuard(engine.client.connection, engine.client.options.namespace, logger);
  const starts = { db: engine.db, client: engine.client, taskQueue: engine.taskQueue, searchAttributes };
  const runId = (await startRun(starts, operatorCaller(tenantId), { threadId: thread.id, input: 'go' })).run.id;
  return { runId, result: engine.result(runId) };
}

const fakeModel = (name: string): ModelConfig => ({ provider: 'openai', name, baseUrl: llm.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY', stream: true });
const scripted = (script: ScriptStep[]): ModelConfig => ({ provider: 'scripted', script });

describe('LLM turn metrics of the worker', () => {
  test('a priced turn in a tenant: one turn, its tokens (cached among input), its cost by model and tenant name', async () => {
    const tenant = (await insertTenant(engine.db, `metrics-${randomUUID().slice(0, 8)}`))!;
    llm.play([{ text: 'the answer', usage: { input: 1000, output: 200, cached: 400 } }]);
    const { result } = await runOf(fakeModel('gpt-metrics'), tenant.id);
    expect(await result).toMatchObject({ status: 'completed', output: 'the answer' });
    const worker = await scrape(workerUrl);
    const model = { provider: 'openai', model: 'gpt-metrics' };
    expect(sample(worker, 'agent_engine_llm_turns_total', { ...model, outcome: 'ok' })).toBe(1);
    expect(sample(worker, 'agent_engine_llm_turns_total', { ...model, outcome: 'error' })).toBe(0);
    expect(sample(worker, 'agent_engine_llm_turn_duration_seconds_count', model)).toBe(1);
    expect(sample(worker, 'agent_engine_llm_time_to_first_token_seconds_count', model)).toBe(1);
    expect(['input', 'output', 'cached_input'].map((kind) => sample(worker, 'agent_engine_llm_tokens_total', { ...model, kind })))
      .toEqual([1000, 200, 400]);
    // (600 × 2 + 400 × 0.5 + 200 × 8) / 10⁶, by the tenant's name, never its id.
    expect(sample(worker, 'agent_engine_cost_usd_total', { model: 'gpt-metrics', tenant: tenant.name })).toBeCloseTo(0.003, 12);
    expect(worker).not.toContain(tenant.id);
  });

  test('a request that fails and its retry that answers: one error, one ok, and the tokens of the answer only', async () => {
    llm.play([{ status: 503, body: { error: { message: 'overloaded' } } }, { text: 'second time', usage: { input: 30, output: 5 } }]);
    const { result } = await runOf(fakeModel('gpt-flaky'));
    expect(await result).toMatchObject({ status: 'completed', output: 'second time' });
    const worker = await scrape(workerUrl);
    const model = { provider: 'openai', model: 'gpt-flaky' };
    expect(sample(worker, 'agent_engine_llm_turns_total', { ...model, outcome: 'error' })).toBe(1);
    expect(sample(worker, 'agent_engine_llm_turns_total', { ...model, outcome: 'ok' })).toBe(1);
    expect(sample(worker, 'agent_engine_llm_tokens_total', { ...model, kind: 'input' })).toBe(30);
    // Not in the price table: no cost at all, rather than a free one.
    expect(sample(worker, 'agent_engine_cost_usd_total', { model: 'gpt-flaky' })).toBe(0);
    expect(worker).not.toMatch(/^agent_engine_cost_usd_total\{model="gpt-flaky"/m);
  }, 60_000);

  test('words streamed in 3 chunks: 3 observations of stream lag, one first token; a tool turn and an answer: 2 turns', async () => {
    const before = await scrape(workerUrl);
    const lagCount = (text: string) => sample(text, 'agent_engine_stream_lag_seconds_count');
    const turns = (text: string) => sample(text, 'agent_engine_llm_turns_total', { provider: 'scripted', model: 'scripted', outcome: 'ok' });
    const fx = await insertFixtureIntegration(engine.db);
    const { result } = await runOf(scripted([
      { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }] }, { text: 'one two three', chunks: 3, delayMs: 90 },
    ]), 'ten_default', [fx.id]);
    expect(await result).toMatchObject({ status: 'completed', output: 'one two three' });
    const after = await scrape(workerUrl);
    expect(lagCount(after) - lagCount(before)).toBe(3);
    expect(turns(after) - turns(before)).toBe(2);
    const firstToken = (text: string) => sample(text, 'agent_engine_llm_time_to_first_token_seconds_count', { provider: 'scripted' });
    expect(firstToken(after) - firstToken(before)).toBe(1);
    // The first chunk came after a third of the 90 ms; the whole reply after all of it.
    const seconds = (text: string, metric: string) => sample(text, `agent_engine_llm_${metric}_sum`, { provider: 'scripted' });
    expect(seconds(after, 'time_to_first_token_seconds') - seconds(before, 'time_to_first_token_seconds')).toBeGreaterThanOrEqual(0.025);
    expect(seconds(after, 'turn_duration_seconds') - seconds(before, 'turn_duration_seconds')).toBeGreaterThanOrEqual(0.085);
    // The MCP server the run called: one connection, by the integration's name.
    expect(sample(after, 'agent_engine_mcp_connections', { integration: fx.name })).toBe(1);
  }, 60_000);
});

describe('runs waiting for a person, read from the database at each scrape (API)', () => {
  test('a tool call waiting for approval: runs_waiting{waiting_for="approval"} 1, then 0 once it is decided', async () => {
    const waiting = async (kind: string) => sample(await scrape(apiUrl), 'agent_engine_runs_waiting', { waiting_for: kind });
    expect([await waiting('approval'), await waiting('input')]).toEqual([0, 0]);
    const fx = await insertFixtureIntegration(engine.db, { approval: { default: 'always' } });
    const { runId, result } = await runOf(scripted([{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }] }, { text: 'done' }]),
      'ten_default', [fx.id]);
    await waitFor(async () => (await inject({ method: 'GET', url: `/v1/runs/${runId}` })).pendingApprovals.length === 1, 60_000, 'the approval');
    expect([await waiting('approval'), await waiting('input')]).toEqual([1, 0]);
    await inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_1`, payload: { decision: 'approve' } });
    expect(await result).toMatchObject({ status: 'completed', output: 'done' });
    expect(await waiting('approval')).toBe(0);
  }, 90_000);
});
