import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../platform/ports';
import { httpClient as client } from '../support/http-client';
import { exited, spawnApi, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

describe('npm run api and npm run worker with METRICS_PORT', () => {
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(children.map(exited));
  });

  test('each serves its metrics on METRICS_HOST:METRICS_PORT behind METRICS_TOKEN, and stops cleanly', async () => {
    const stack = testStack();
    const token = 'metrics-token-for-processes';
    const [port, apiMetricsPort, workerMetricsPort, temporalMetricsPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const env = {
      DATABASE_URL: stack.databases.external, TASK_QUEUE: `metrics-${randomUUID()}`, TEMPORAL_ADDRESS: stack.temporalAddress,
      METRICS_HOST: '127.0.0.1', METRICS_TOKEN: token,
    };
    children.push(
      spawnApi({ ...env, PORT: String(port), METRICS_PORT: String(apiMetricsPort) }),
      spawnWorker({ ...env, METRICS_PORT: String(workerMetricsPort), TEMPORAL_METRICS_PORT: String(temporalMetricsPort) }),
    );
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 120_000, 'the API to be ready');
    const api = client(base);
    const agent = await api.post('/v1/agents', { name: `metrics_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'ok' }] } });
    const run = await api.post('/v1/runs', { agentId: agent.json.id, input: 'go' });
    expect(run.status).toBe(202);
    expect((await api.get(`/v1/runs/${run.json.id}?waitMs=30000`)).json).toMatchObject({ status: 'completed' });

    const scrape = (metricsPort: number, headers: Record<string, string> = { authorization: `Bearer ${token}` }) =>
      fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers });
    expect((await scrape(apiMetricsPort, {})).status).toBe(401);
    expect((await scrape(workerMetricsPort, {})).status).toBe(401);
    const apiText = await (await scrape(apiMetricsPort)).text();
    expect(apiText).toContain(`agent_engine_runs_started_total{agent="${agent.json.name}",process="api"} 1`);
    expect(apiText).toMatch(/^agent_engine_http_requests_total\{route="\/v1\/runs\/:id",method="GET",status="200",process="api"\} 1$/m);
    expect(apiText).toMatch(/^agent_engine_db_pool_connections\{pool="main",state="in_use",process="api"\} \d+$/m);
    await waitFor(async () => (await (await scrape(workerMetricsPort)).text())
      .includes(`agent_engine_runs_ended_total{status="completed",stop_reason="answer",agent="${agent.json.name}",process="worker"} 1`),
    10_000, 'the worker to count the run');
    // The Temporal SDK's own metrics, apart from the engine's, behind the same token.
    expect((await scrape(temporalMetricsPort, {})).status).toBe(401);
    // The run's row ends in its last activity; the workflow completes in the workflow task after it, so
    // the SDK counts the completion a moment after the API answers `completed`: read it once it is there.
    const completed = /^temporal_workflow_completed\{.*task_queue="metrics-[^"]+".*\} [1-9]/m;
    let temporalText = '';
    await waitFor(async () => completed.test(temporalText = await (await scrape(temporalMetricsPort)).text()),
      10_000, 'the Temporal SDK to count the workflow\'s completion');
    expect(temporalText).toMatch(/^temporal_worker_task_slots_available\{.*\} \d+$/m);
    expect(temporalText).toMatch(completed);
    expect(temporalText).not.toMatch(/^agent_engine_/m);

    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map(exited));
    expect(children.map((c) => c.exitCode)).toEqual([0, 0]);
  }, 240_000);

  test('with OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, the API and the worker send their metrics, and the worker the Temporal SDK\'s, '
    + 'to the collector by OTLP/HTTP with OTEL_EXPORTER_OTLP_METRICS_HEADERS', async () => {
    const posts: Post[] = [];
    const collector = await startCollector(posts);
    try {
      const { port } = collector.address() as AddressInfo;
      const env = {
        DATABASE_URL: testStack().databases.external, TASK_QUEUE: `otlp-${randomUUID()}`, TEMPORAL_ADDRESS: testStack().temporalAddress,
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `http://127.0.0.1:${port}/v1/metrics`, OTEL_METRIC_EXPORT_INTERVAL: '500',
        OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'authorization=Bearer%20collector-secret',
      };
      const apiPort = await freePort();
      // The API as JSON (http/json), to read what it says; the worker as the default, protobuf.
      const api = spawnApi({ ...env, PORT: String(apiPort), OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json' });
      const worker = spawnWorker(env);
      children.push(api, worker);
      const base = `http://127.0.0.1:${apiPort}`;
      await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 120_000, 'the API to be ready');
      const name = `otlp_${randomUUID().slice(0, 8)}`;
      const agent = await client(base).post('/v1/agents', { name, model: { provider: 'scripted', script: [{ text: 'ok' }] } });
      const run = await client(base).post('/v1/runs', { agentId: agent.json.id, input: 'go' });
      expect((await client(base).get(`/v1/runs/${run.json.id}?waitMs=30000`)).json).toMatchObject({ status: 'completed' });

      await waitFor(async () => posts.some((p) => p.body.includes('temporal_')), 60_000, 'an OTLP export of temporal_ metrics');
      await waitFor(async () => posts.some((p) => p.type === 'application/x-protobuf' && p.body.includes('agent_engine_runs_ended_total')
        && p.body.includes(name)), 30_000, 'the worker\'s export of the run\'s end');
      const apiExports = () => posts.filter((p) => p.type === 'application/json');
      const ofAgent = (d: { attributes: OtlpAttribute[] }) => d.attributes.some((a) => a.value.stringValue === name);
      let started: OtlpMetric | undefined;
      await waitFor(async () => {
        started = apiExports().map((p) => otlpMetric(p, 'agent_engine_runs_started_total')).find((m) => m?.sum?.dataPoints.some(ofAgent));
        return started !== undefined;
      }, 30_000, 'the API\'s export of the run\'s start');
      expect(started?.sum).toMatchObject({ isMonotonic: true, aggregationTemporality: 2 });
      expect(started?.sum?.dataPoints.find(ofAgent)).toMatchObject({
        asDouble: 1, attributes: expect.arrayContaining([{ key: 'agent', value: { stringValue: name } }, { key: 'process', value: { stringValue: 'api' } }]),
      });
      // A histogram's buckets as OTLP counts them: per bucket, adding up to its count.
      const latency = apiExports().map((p) => otlpMetric(p, 'agent_engine_http_request_duration_seconds')).at(-1);
      for (const point of latency?.histogram?.dataPoints ?? []) {
        expect(point.bucketCounts.map(Number).reduce((a, b) => a + b, 0)).toBe(Number(point.count));
        expect(point.bucketCounts).toHaveLength(point.explicitBounds.length + 1);
      }
      expect(latency?.histogram?.dataPoints.length).toBeGreaterThan(0);
      expect(posts.every((p) => p.path === '/v1/metrics' && p.authorization === 'Bearer collector-secret')).toBe(true);
      for (const c of [api, worker]) c.kill('SIGTERM');
      await Promise.all([exited(api), exited(worker)]);
      expect([api.exitCode, worker.exitCode]).toEqual([0, 0]);
    } finally {
      collector.closeAllConnections();
      await new Promise((resolve) => collector.close(resolve));
    }
  }, 240_000);
});

interface Post { path: string; type: string | undefined; authorization: string | undefined; body: Buffer }

/** A collector as far as the processes can tell: it keeps what is posted and answers 200. */
async function startCollector(posts: Post[]): Promise<http.Server> {
  const collector = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      posts.push({ path: req.url ?? '', type: req.headers['content-type'], authorization: req.headers.authorization, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' }).end(req.headers['content-type'] === 'application/json' ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  return collector;
}

interface OtlpAttribute { key: string; value: { stringValue?: string } }
interface OtlpMetric {
  name: string;
  sum?: { isMonotonic: boolean; aggregationTemporality: number; dataPoints: { attributes: OtlpAttribute[]; asDouble: number }[] };
  histogram?: { dataPoints: { attributes: OtlpAttribute[]; count: number | string; bucketCounts: (number | string)[]; explicitBounds: number[] }[] };
}

/** The metric of that name in an OTLP/JSON export. */
function otlpMetric(post: Post, name: string): OtlpMetric | undefined {
  const body = JSON.parse(post.body.toString('utf8')) as { resourceMetrics: { scopeMetrics: { metrics: OtlpMetric[] }[] }[] };
  return body.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)).find((m) => m.name === name);
}
