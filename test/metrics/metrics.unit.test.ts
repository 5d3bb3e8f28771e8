import { loadConfig } from '../../platform/config';
import { ApiMetrics } from '../../platform/metrics/api-metrics';
import { LabelCap } from '../../platform/metrics/label-cap';
import { startMetricsServer } from '../../platform/metrics/metrics-server';
import { WorkerMetrics } from '../../platform/metrics/worker-metrics';

/** The label values of one metric's samples, from the registry's exposition text. */
async function labelValues(registry: ApiMetrics['registry'], metric: string, label: string): Promise<string[]> {
  const text = await registry.metrics();
  const pattern = new RegExp(`^${metric}\\{[^}]*\\b${label}="([^"]*)"`, 'gm');
  return [...text.matchAll(pattern)].map((m) => m[1]);
}

describe('the label cap', () => {
  test('keeps the first N distinct values of each metric\'s label and counts later ones as other', () => {
    const cap = new LabelCap(2);
    expect(cap.value('runs', 'agent', 'a')).toBe('a');
    expect(cap.value('runs', 'agent', 'b')).toBe('b');
    expect(cap.value('runs', 'agent', 'c')).toBe('other');
    // A kept value stays kept; another metric or label has a budget of its own.
    expect(cap.value('runs', 'agent', 'a')).toBe('a');
    expect(cap.value('tools', 'agent', 'c')).toBe('c');
    expect(cap.value('runs', 'integration', 'c')).toBe('c');
  });

  test('an absent value is none, and a very long one is cut', () => {
    const cap = new LabelCap(10);
    expect(cap.value('m', 'l', undefined)).toBe('none');
    expect(cap.value('m', 'l', 'x'.repeat(1000))).toHaveLength(128);
  });

  test('150 agents: runs_started_total holds at most 100 agent values and other', async () => {
    const metrics = new ApiMetrics({ maxLabelValues: 100 });
    for (let i = 0; i < 150; i++) metrics.runStarted(`agent-${i}`);
    const agents = await labelValues(metrics.registry, 'agent_engine_runs_started_total', 'agent');
    expect(agents).toHaveLength(101);
    expect(agents).toContain('other');
    expect(agents).toContain('agent-99');
    expect(agents).not.toContain('agent-100');
    expect(await metrics.registry.metrics()).toMatch(/^agent_engine_runs_started_total\{agent="other",process="api"\} 50$/m);
  });

  test('150 agents: runs_ended_total holds at most 100 agent values and other', async () => {
    const metrics = new WorkerMetrics({ maxLabelValues: 100 });
    for (let i = 0; i < 150; i++) metrics.runEnded({ status: 'completed', stopReason: 'answer', agent: `agent-${i}`, seconds: 1 });
    const agents = await labelValues(metrics.registry, 'agent_engine_runs_ended_total', 'agent');
    expect(new Set(agents).size).toBe(101);
    expect(agents).toContain('other');
  });
});

describe('the label cap at METRICS_MAX_LABEL_VALUES=150', () => {
  const { maxLabelValues } = loadConfig({ METRICS_MAX_LABEL_VALUES: '150' }).metrics;

  test('151 agents: the first 150 keep their names, the 151st is counted as other', async () => {
    const metrics = new ApiMetrics({ maxLabelValues });
    for (let i = 1; i <= 151; i++) metrics.runStarted(`agent-${i}`);
    const agents = await labelValues(metrics.registry, 'agent_engine_runs_started_total', 'agent');
    expect(agents).toHaveLength(151);
    expect(agents).toContain('agent-150');
    expect(agents).not.toContain('agent-151');
    expect(await metrics.registry.metrics()).toMatch(/^agent_engine_runs_started_total\{agent="other",process="api"\} 1$/m);
  });

  test('the LLM metrics\' models, cost\'s tenants and MCP connections\' integrations are capped alike', async () => {
    const open: string[] = [];
    const metrics = new WorkerMetrics({ maxLabelValues, mcpConnections: () => open });
    for (let i = 1; i <= 151; i++) {
      metrics.turnRecorded({
        provider: 'openai', model: `model-${i}`, usage: { inputTokens: 1, outputTokens: 1 }, costUsd: 0.5, tenant: `tenant-${i}`, seconds: 1,
      });
      open.push(`integration-${i}`);
    }
    const text = await metrics.registry.metrics();
    expect(new Set(await labelValues(metrics.registry, 'agent_engine_llm_turns_total', 'model')).size).toBe(151);
    expect(text).toMatch(/^agent_engine_llm_turns_total\{provider="openai",model="other",outcome="ok",process="worker"\} 1$/m);
    expect(text).toMatch(/^agent_engine_cost_usd_total\{model="other",tenant="other",process="worker"\} 0\.5$/m);
    expect(await labelValues(metrics.registry, 'agent_engine_cost_usd_total', 'tenant')).toHaveLength(151);
    expect(text).toMatch(/^agent_engine_mcp_connections\{integration="other",process="worker"\} 1$/m);
    expect(text).toMatch(/^agent_engine_mcp_connections\{integration="integration-150",process="worker"\} 1$/m);
  });
});

describe('LLM turns', () => {
  test('an unpriced turn adds no cost; a failed request counts an error and no tokens', async () => {
    const metrics = new WorkerMetrics({ maxLabelValues: 10 });
    const turn = { provider: 'openai', model: 'm', usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 4 }, seconds: 0.5 };
    metrics.turnRecorded({ ...turn, costUsd: null, tenant: 'acme' });
    metrics.turnFailed({ provider: 'openai', model: 'm' });
    const text = await metrics.registry.metrics();
    expect(text).not.toMatch(/^agent_engine_cost_usd_total\{/m);
    expect(text).toMatch(/^agent_engine_llm_turns_total\{provider="openai",model="m",outcome="error",process="worker"\} 1$/m);
    expect(text).toMatch(/^agent_engine_llm_tokens_total\{provider="openai",model="m",kind="cached_input",process="worker"\} 4$/m);
    // No chunk streamed: no time to first token.
    expect(text).toMatch(/^agent_engine_llm_turn_duration_seconds_count\{process="worker",provider="openai",model="m"\} 1$/m);
    expect(text).not.toMatch(/^agent_engine_llm_time_to_first_token_seconds_count\{/m);
  });
});

describe('runs waiting', () => {
  test('read at each scrape; a failed read leaves the gauge out and the rest of the scrape goes', async () => {
    let read: () => Promise<Record<string, number>> = async () => ({ approval: 2, input: 0 });
    const metrics = new ApiMetrics({ maxLabelValues: 10, waitingRuns: () => read() });
    expect(await metrics.registry.metrics()).toMatch(/^agent_engine_runs_waiting\{waiting_for="approval",process="api"\} 2$/m);
    read = async () => { throw new Error('the database is gone'); };
    const text = await metrics.registry.metrics();
    expect(text).not.toMatch(/^agent_engine_runs_waiting\{/m);
    expect(text).toContain('# TYPE agent_engine_http_requests_total counter');
  });
});

describe('the database pools', () => {
  test('in use, idle and waiting are read at scrape time', async () => {
    let stats = { total: 3, idle: 1, waiting: 0 };
    const metrics = new ApiMetrics({ maxLabelValues: 100, pools: { main: () => stats } });
    expect(await metrics.registry.metrics()).toMatch(/^agent_engine_db_pool_connections\{pool="main",state="in_use",process="api"\} 2$/m);
    stats = { total: 10, idle: 0, waiting: 4 };
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^agent_engine_db_pool_connections\{pool="main",state="in_use",process="api"\} 10$/m);
    expect(text).toMatch(/^agent_engine_db_pool_connections\{pool="main",state="waiting",process="api"\} 4$/m);
  });
});

describe('metrics configuration', () => {
  test('off loopback without METRICS_TOKEN is refused, with what to do', () => {
    expect(() => loadConfig({ METRICS_HOST: '0.0.0.0', METRICS_PORT: '9464' })).toThrow(/METRICS_HOST=0\.0\.0\.0 .*Set METRICS_TOKEN/);
    expect(() => loadConfig({ METRICS_HOST: '0.0.0.0' })).toThrow(/METRICS_TOKEN/);
  });

  test('off loopback with a token, or on loopback without, is accepted', () => {
    const config = loadConfig({ METRICS_HOST: '0.0.0.0', METRICS_PORT: '9464', METRICS_TOKEN: 'a-long-enough-token' });
    expect(config.metrics).toEqual({ host: '0.0.0.0', port: 9464, token: 'a-long-enough-token', maxLabelValues: 100 });
    expect(loadConfig({ METRICS_MAX_LABEL_VALUES: '7' }).metrics).toEqual({ host: '127.0.0.1', maxLabelValues: 7 });
  });

  test('OTEL_EXPORTER_OTLP_METRICS_*: where the Temporal SDK\'s metrics go, by HTTP unless told gRPC', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://collector:4318/v1/metrics' }).metrics.otlp)
      .toEqual({ url: 'http://collector:4318/v1/metrics', http: true, json: false, headers: {}, exportIntervalMs: 60_000 });
    expect(loadConfig({
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'authorization=Bearer%20abc,x-team=ops', OTEL_METRIC_EXPORT_INTERVAL: '15000',
    }).metrics.otlp).toEqual({
      url: 'http://collector:4317', http: false, json: false, headers: { authorization: 'Bearer abc', 'x-team': 'ops' }, exportIntervalMs: 15_000,
    });
    expect(loadConfig({}).metrics.otlp).toBeUndefined();
    expect(() => loadConfig({ TEMPORAL_METRICS_PORT: '9466', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' }))
      .toThrow(/TEMPORAL_METRICS_PORT and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT.*set one/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'ftp://c' })).toThrow(/OTEL_EXPORTER_OTLP_METRICS_ENDPOINT/);
  });

  test('bad values name the variable', () => {
    expect(() => loadConfig({ METRICS_PORT: 'ninety' })).toThrow(/METRICS_PORT/);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN: must be at least 16 characters/);
    expect(() => loadConfig({ METRICS_MAX_LABEL_VALUES: '0' })).toThrow(/METRICS_MAX_LABEL_VALUES/);
  });
});

describe('the metrics server', () => {
  test('with METRICS_TOKEN, a scrape without the bearer token gets 401, with it the registry', async () => {
    const metrics = new WorkerMetrics({ maxLabelValues: 100 });
    const server = await startMetricsServer({ host: '127.0.0.1', port: 0, token: 'a-long-enough-token', registry: metrics.registry });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const refused = await fetch(server.url);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer');
      expect((await fetch(server.url, { headers: { authorization: 'Bearer wrong-token-of-some-length' } })).status).toBe(401);
      const scraped = await fetch(server.url, { headers: { authorization: 'Bearer a-long-enough-token' } });
      expect(scraped.status).toBe(200);
      expect(scraped.headers.get('content-type')).toBe(metrics.registry.contentType);
      expect(await scraped.text()).toContain('# TYPE agent_engine_runs_ended_total counter');
      expect((await fetch(server.url.replace('/metrics', '/other'))).status).toBe(404);
      expect((await fetch(server.url, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
    }
  });
});
