import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import { ApiMetrics } from '../../platform/metrics/api-metrics';
import { startMetricsServer, type MetricsServer } from '../../platform/metrics/metrics-server';
import { WorkerMetrics } from '../../platform/metrics/worker-metrics';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { insertFixtureIntegration } from '../support/fixture-integration';

let engine: Engine;
let app: FastifyInstance;
const servers: MetricsServer[] = [];
let apiUrl: string;
let workerUrl: string;
const TOKEN = 'scrape-token-of-the-test';

beforeAll(async () => {
  const apiMetrics = new ApiMetrics({ maxLabelValues: 100, pools: {} });
  const workerMetrics = new WorkerMetrics({ maxLabelValues: 100 });
  ({ engine, app } = await startApiEngine('embedded', { metrics: apiMetrics }, { metrics: workerMetrics }));
  for (const registry of [apiMetrics.registry, workerMetrics.registry]) {
    servers.push(await startMetricsServer({ host: '127.0.0.1', port: 0, token: TOKEN, registry }));
  }
  [apiUrl, workerUrl] = servers.map((s) => s.url);
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await stopApiEngine({ engine, app });
});

const inject = async (options: InjectOptions) => {
  const res = await app.inject(options);
  expect(res.statusCode).toBeLessThan(300);
  return res.json();
};

/** A scrape as Prometheus makes it, over HTTP with the bearer token. */
async function scrape(url: string): Promise<string> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** The value of the sample of `metric` whose labels include all of `labels` (0 when there is none). */
function sample(text: string, metric: string, labels: Record<string, string>): number {
  const line = text.split('\n').find((l) => l.startsWith(`${metric}{`)
    && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line ? Number(line.split(' ').pop()) : 0;
}

/**
 * A scrape once `metric{labels}` reads `expected`, or the last one after 5 s. The worker counts a
 * run's end right after the commit that ends it, and a reader woken by that commit may scrape first.
 */
async function scrapeWhen(url: string, metric: string, labels: Record<string, string>, expected: number): Promise<string> {
  let text = await scrape(url);
  const deadline = Date.now() + 5_000;
  while (sample(text, metric, labels) !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    text = await scrape(url);
  }
  return text;
}

async function agentThread(script: ScriptStep[], extra: Record<string, unknown> = {}) {
  const agent = await inject({
    method: 'POST', url: '/v1/agents', payload: { name: `metrics-${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, ...extra },
  });
  const thread = await inject({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } });
  return { agent, threadId: thread.id as string };
}

async function runToEnd(threadId: string) {
  const { id } = await inject({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'go' } });
  return inject({ method: 'GET', url: `/v1/runs/${id}?waitMs=30000` });
}

describe('Prometheus metrics of the API and the worker', () => {
  test('2 completed runs: runs_started_total and runs_ended_total{status="completed"} each move by exactly 2', async () => {
    const { agent, threadId } = await agentThread([{ text: 'done' }]);
    const labels = { agent: agent.name, status: 'completed', stop_reason: 'answer' };
    const before = sample(await scrape(workerUrl), 'agent_engine_runs_ended_total', labels);
    for (let i = 0; i < 2; i++) expect(await runToEnd(threadId)).toMatchObject({ status: 'completed', output: 'done' });
    expect(sample(await scrape(apiUrl), 'agent_engine_runs_started_total', { agent: agent.name })).toBe(2);
    const worker = await scrapeWhen(workerUrl, 'agent_engine_runs_ended_total', labels, before + 2);
    expect(sample(worker, 'agent_engine_runs_ended_total', labels) - before).toBe(2);
    expect(sample(worker, 'agent_engine_run_duration_seconds_count', { status: 'completed' })).toBeGreaterThanOrEqual(2);
  });

  test('a run that ends out of turns is counted once, by the run\'s end the workflow decided', async () => {
    const fx = await insertFixtureIntegration(engine.db);
    const { agent, threadId } = await agentThread(
      [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }] }, { text: 'never' }],
      { maxTurns: 1, integrationIds: [fx.id] },
    );
    expect(await runToEnd(threadId)).toMatchObject({ stopReason: 'max_turns' });
    const ended = { agent: agent.name, stop_reason: 'max_turns' };
    const worker = await scrapeWhen(workerUrl, 'agent_engine_runs_ended_total', ended, 1);
    expect(sample(worker, 'agent_engine_runs_ended_total', ended)).toBe(1);
    // The tool call, by its integration's name, never its id.
    expect(sample(worker, 'agent_engine_tool_calls_total', { integration: fx.name, type: 'mcp_tool', outcome: 'ok' })).toBe(1);
    expect(sample(worker, 'agent_engine_tool_call_duration_seconds_count', { integration: fx.name, type: 'mcp_tool' })).toBe(1);
  });

  test('requests are counted by route pattern, and no label value holds an id', async () => {
    const { threadId } = await agentThread([{ text: 'done' }]);
    const run = await runToEnd(threadId);
    await app.inject({ method: 'GET', url: `/v1/runs/${run.id}` });
    await app.inject({ method: 'GET', url: '/v1/no/such/route/run_abc' });
    const api = await scrape(apiUrl);
    expect(sample(api, 'agent_engine_http_requests_total', { route: '/v1/runs/:id', method: 'GET', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(sample(api, 'agent_engine_http_request_duration_seconds_count', { route: '/v1/runs/:id', method: 'GET' })).toBeGreaterThanOrEqual(2);
    expect(sample(api, 'agent_engine_http_requests_total', { route: 'unmatched', method: 'GET' })).toBeGreaterThanOrEqual(1);
    for (const text of [api, await scrape(workerUrl)]) {
      const values = [...text.matchAll(/="([^"]*)"/g)].map((m) => m[1]);
      expect(values.length).toBeGreaterThan(0);
      expect(values.filter((v) => /(run|thr|agt|int|key|ten)_[A-Za-z0-9]/.test(v))).toEqual([]);
    }
  });
});
