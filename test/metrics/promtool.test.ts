import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ModelConfig, ScriptStep } from '../../core/agent-model';
import { createProviders } from '../../llm/providers';
import { ApiMetrics } from '../../platform/metrics/api-metrics';
import { startMetricsServer, type MetricsServer } from '../../platform/metrics/metrics-server';
import { WorkerMetrics } from '../../platform/metrics/worker-metrics';
import { insertAgent } from '../../store/agents';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { dashboardQueries, readDashboard } from '../support/dashboard';
import { logger, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer } from '../support/fake-llm-server';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { ROOT } from '../support/processes';
import { promtool, promtoolDescribe } from '../support/promtool';

const PROMETHEUS_DIR = path.join(ROOT, 'deploy', 'prometheus');

promtoolDescribe('promtool on the engine\'s scrapes, alerts, Prometheus configuration and dashboard', () => {
  describe('promtool check metrics on the scrapes of the API and the worker', () => {
    let engine: Engine;
    let app: FastifyInstance;
    let llm: FakeLlmServer;
    const servers: MetricsServer[] = [];
    const TOKEN = 'scrape-token-of-the-promtool-test';

    beforeAll(async () => {
      llm = await startFakeLlmServer();
      const apiMetrics = new ApiMetrics({ maxLabelValues: 100, pools: { main: () => ({ total: 3, idle: 2, waiting: 0 }) } });
      const workerMetrics = new WorkerMetrics({ maxLabelValues: 100 });
      const providers = createProviders({ readApiKey: (name) => (name === 'FAKE_LLM_KEY' ? 'fake-key' : undefined), allowedKeyEnvs: ['FAKE_LLM_KEY'], logger });
      ({ engine, app } = await startApiEngine('embedded', { metrics: apiMetrics }, { metrics: workerMetrics, providers }));
      for (const registry of [apiMetrics.registry, workerMetrics.registry]) {
        servers.push(await startMetricsServer({ host: '127.0.0.1', port: 0, token: TOKEN, registry }));
      }
    });
    afterAll(async () => {
      await Promise.all(servers.map((s) => s.close()));
      await stopApiEngine({ engine, app });
      await llm?.close();
    });

    const inject = async (options: InjectOptions) => {
      const res = await app.inject(options);
      expect(res.statusCode).toBeLessThan(300);
      return res.json();
    };

    async function runToEnd(agentId: string) {
      const thread = await inject({ method: 'POST', url: '/v1/threads', payload: { agentId } });
      const { id } = await inject({ method: 'POST', url: `/v1/threads/${thread.id}/runs`, payload: { input: 'go' } });
      return inject({ method: 'GET', url: `/v1/runs/${id}?waitMs=30000` });
    }

    const scriptedAgent = async (script: ScriptStep[], extra: Record<string, unknown> = {}) => inject({
      method: 'POST', url: '/v1/agents', payload: { name: `promtool-${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, ...extra },
    });

    test('a completed run, one with a tool call that answers and one that errs, and a failed run: each scrape passes promtool check metrics', async () => {
      expect(await runToEnd((await scriptedAgent([{ text: 'done' }])).id)).toMatchObject({ status: 'completed' });
      const fx = await insertFixtureIntegration(engine.db);
      const tools = await scriptedAgent([
        { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }, { name: `${fx.name}__fail`, arguments: {} }] }, { text: 'done' },
      ], { integrationIds: [fx.id] });
      expect(await runToEnd(tools.id)).toMatchObject({ status: 'completed' });
      // A provider that refuses the key fails the run.
      llm.play([{ status: 401, body: { error: { message: 'Incorrect API key provided' } } }]);
      const failing = await insertAgent(engine.db, {
        name: `promtool-${randomUUID().slice(0, 8)}`, model: { provider: 'openai', name: 'fake-model', baseUrl: llm.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY' } as ModelConfig,
      });
      expect(await runToEnd(failing.id)).toMatchObject({ status: 'failed', stopReason: 'error' });

      const [api, worker] = await Promise.all(servers.map(async (s) => {
        const res = await fetch(s.url, { headers: { authorization: `Bearer ${TOKEN}` } });
        expect(res.status).toBe(200);
        return res.text();
      }));
      // The scrapes hold what the runs did, so promtool checks every kind of the engine's metrics.
      expect(api).toMatch(/^agent_engine_runs_started_total\{/m);
      expect(api).toMatch(/^agent_engine_db_pool_connections\{/m);
      expect(worker).toMatch(/^agent_engine_runs_ended_total\{[^}]*status="failed"/m);
      expect(worker).toMatch(/^agent_engine_tool_calls_total\{[^}]*outcome="error"/m);
      expect(worker).toMatch(/^agent_engine_tool_call_duration_seconds_bucket\{/m);
      for (const scrape of [api, worker]) {
        expect(await promtool(['check', 'metrics'], { stdin: scrape })).toEqual({ code: 0, stdout: '', stderr: '' });
      }
    });
  });

  test('promtool check metrics reports a problem: the check can fail', async () => {
    const bad = '# HELP agent_engine_things Things\n# TYPE agent_engine_things counter\nagent_engine_things 1\n';
    const result = await promtool(['check', 'metrics'], { stdin: bad });
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/counter metrics should have "_total" suffix/);
  });

  test('deploy/prometheus/alerts.yml passes promtool check rules', async () => {
    const result = await promtool(['check', 'rules', 'alerts.yml'], { cwd: PROMETHEUS_DIR });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/SUCCESS: 6 rules found/);
  });

  test('deploy/prometheus/alerts.test.yml: the alerts fire above their thresholds, and not below (promtool test rules)', async () => {
    const result = await promtool(['test', 'rules', 'alerts.test.yml'], { cwd: PROMETHEUS_DIR });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/SUCCESS/);
  });

  test('deploy/prometheus/prometheus.yml passes promtool check config, with its rule file and a token file where Compose writes it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'promtool-config-'));
    try {
      const config = fs.readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8');
      expect(config).toContain('credentials_file: /prometheus/metrics-token');
      fs.writeFileSync(path.join(dir, 'metrics-token'), 'a-token-of-sixteen-chars');
      fs.writeFileSync(path.join(dir, 'prometheus.yml'), config.replaceAll('/prometheus/metrics-token', path.join(dir, 'metrics-token')));
      fs.copyFileSync(path.join(PROMETHEUS_DIR, 'alerts.yml'), path.join(dir, 'alerts.yml'));
      const result = await promtool(['check', 'config', 'prometheus.yml'], { cwd: dir });
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(/SUCCESS: 1 rule files found/);
      expect(result.stdout).toMatch(/SUCCESS: 6 rules found/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('every query of deploy/grafana/agent-engine.json is PromQL Prometheus parses (each as a recording rule)', async () => {
    const queries = dashboardQueries(readDashboard());
    const rules = queries.map(({ panel, refId, expr }) => `      - record: dashboard:panel_${panel.id}_${refId}\n        expr: ${JSON.stringify(expr)}\n`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'promtool-dashboard-'));
    try {
      fs.writeFileSync(path.join(dir, 'dashboard.yml'), `groups:\n  - name: dashboard\n    rules:\n${rules.join('')}`);
      const result = await promtool(['check', 'rules', 'dashboard.yml'], { cwd: dir });
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toContain(`SUCCESS: ${queries.length} rules found`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
