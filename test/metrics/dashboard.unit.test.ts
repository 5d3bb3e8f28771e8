import fs from 'node:fs';
import path from 'node:path';
import { METRIC_PREFIX } from '../../platform/metrics/registry';
import { dashboardQueries, dataPanels, metricNames, readDashboard } from '../support/dashboard';

const ROOT = path.join(__dirname, '..', '..');
const read = (relative: string) => fs.readFileSync(path.join(ROOT, relative), 'utf8');

/** The metrics the dashboard must show besides the basics. */
const PANEL_METRICS = [
  'llm_turns_total', 'llm_turn_duration_seconds', 'llm_time_to_first_token_seconds', 'llm_tokens_total', 'cost_usd_total',
  'runs_waiting', 'stream_lag_seconds', 'mcp_connections',
].map((name) => `${METRIC_PREFIX}${name}`);

/** Every name platform/metrics/ gives a metric (`${METRIC_PREFIX}name`). */
function engineMetricNames(): Set<string> {
  const dir = path.join(ROOT, 'platform', 'metrics');
  const source = fs.readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('\n');
  return new Set([...source.matchAll(/`\$\{METRIC_PREFIX\}([a-z0-9_]+)`/g)].map((m) => `${METRIC_PREFIX}${m[1]}`));
}

/** A histogram's series are its name with _bucket, _sum or _count; the Temporal SDK's names are its own (temporal_). */
function unknownNames(names: string[], known: Set<string>): string[] {
  return names.filter((name) => !name.startsWith('temporal_') && !known.has(name) && !known.has(name.replace(/_(bucket|sum|count)$/, '')));
}

describe('metricNames', () => {
  test('finds the selected metrics, not functions, aggregations, labels, strings or ranges', () => {
    expect(metricNames('sum by (status) (rate(agent_engine_runs_ended_total{status="failed", agent=~"a_b"}[5m]))')).toEqual(['agent_engine_runs_ended_total']);
    expect(metricNames('histogram_quantile(0.95, sum by (le) (rate(x_bucket[5m]))) > 2 and on() y unless z offset 5m'))
      .toEqual(['x_bucket', 'y', 'z']);
    expect(metricNames('sum without (instance) (a) / ignoring(b) group_left(c) d * 3600')).toEqual(['a', 'd']);
  });
});

describe('deploy/grafana/agent-engine.json', () => {
  const dashboard = readDashboard();
  const queries = dashboardQueries(dashboard);
  const known = engineMetricNames();

  test('the source defines the engine\'s metrics as the docs list them', () => {
    const defined = engineMetricNames();
    expect([...defined]).toEqual(expect.arrayContaining(['agent_engine_runs_ended_total', 'agent_engine_http_request_duration_seconds']));
    for (const name of defined) expect(read('docs/observability.md')).toContain(`\`${name}\``);
  });

  test('every query reads only metrics the engine defines, or the Temporal SDK\'s', () => {
    expect(queries.length).toBeGreaterThan(15);
    for (const { panel, expr } of queries) {
      const names = metricNames(expr);
      expect({ panel: panel.title, names: names.length > 0 }).toEqual({ panel: panel.title, names: true });
      expect({ panel: panel.title, unknown: unknownNames(names, known) }).toEqual({ panel: panel.title, unknown: [] });
    }
  });

  test('has panels on runs, LLM turns, spend, tools, the API, the stream and the Temporal SDK', () => {
    const selected = new Set(queries.flatMap(({ expr }) => metricNames(expr).map((n) => n.replace(/_bucket$/, ''))));
    const wanted = [
      ...['runs_started_total', 'runs_ended_total', 'run_duration_seconds', 'tool_calls_total', 'tool_call_duration_seconds',
        'http_requests_total', 'http_request_duration_seconds', 'db_pool_connections'].map((name) => `${METRIC_PREFIX}${name}`),
      ...PANEL_METRICS,
      'temporal_workflow_task_schedule_to_start_latency', 'temporal_activity_schedule_to_start_latency',
      'temporal_worker_task_slots_available', 'temporal_request_failure',
    ];
    expect(wanted.filter((name) => !selected.has(name))).toEqual([]);
  });

  test('every panel and query reads the data source of the DS_PROMETHEUS variable; ids are unique', () => {
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', query: 'prometheus' }));
    const panels = dataPanels(dashboard);
    for (const panel of panels) {
      expect({ title: panel.title, ds: panel.datasource }).toEqual({ title: panel.title, ds: { type: 'prometheus', uid: '${DS_PROMETHEUS}' } });
      for (const target of panel.targets ?? []) expect(target.datasource?.uid).toBe('${DS_PROMETHEUS}');
    }
    const ids = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('Grafana\'s provisioning loads it from where docker-compose.yml mounts it, on the compose Prometheus', () => {
    const provider = read('deploy/grafana/provisioning/dashboards/agent-engine.yml');
    const dir = /^\s+path: (\S+)$/m.exec(provider)?.[1];
    expect(read('docker-compose.yml')).toContain(`./deploy/grafana/agent-engine.json:${dir}/agent-engine.json:ro`);
    expect(read('deploy/grafana/provisioning/datasources/prometheus.yml')).toMatch(/type: prometheus\n\s+access: proxy\n\s+url: http:\/\/prometheus:9090\n/);
  });
});

describe('deploy/prometheus/alerts.yml', () => {
  test('reads only metrics the engine defines', () => {
    const names = [...read('deploy/prometheus/alerts.yml').matchAll(/\bagent_engine_[a-z0-9_]+/g)].map((m) => m[0]);
    expect(names.length).toBeGreaterThan(5);
    expect(unknownNames(names, engineMetricNames())).toEqual([]);
  });
});
