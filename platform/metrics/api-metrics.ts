import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LabelCap, OTHER_LABEL_VALUE } from './label-cap';
import { METRIC_PREFIX, processRegistry } from './registry';

/** What the use case that starts runs records; the API's metrics implement it. */
export interface RunStartMetrics {
  /** a run was recorded and its workflow started; `agent` is the agent's name, never its id */
  runStarted(agent: string): void;
}

/** A PostgreSQL pool's connections at scrape time. */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

export interface ApiMetricsOptions {
  maxLabelValues: number;
  /** the process's pools by name ("main", "reads"), read at each scrape */
  pools?: Record<string, () => PoolStats>;
  /** how many runs wait for a person, by what they wait for, read from the database at each scrape */
  waitingRuns?: () => Promise<Record<string, number>>;
}

const REQUEST_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The API process's metrics: requests by route pattern, the PostgreSQL pools, runs started, runs waiting. */
export class ApiMetrics implements RunStartMetrics {
  readonly registry: Registry = processRegistry('api');
  private readonly cap: LabelCap;
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly requestSeconds: Histogram<'route' | 'method'>;
  private readonly runsStarted: Counter<'agent'>;

  constructor(options: ApiMetricsOptions) {
    this.cap = new LabelCap(options.maxLabelValues);
    const registers = [this.registry];
    this.requests = new Counter({
      name: `${METRIC_PREFIX}http_requests_total`, help: 'API requests answered, by route pattern, method and status',
      labelNames: ['route', 'method', 'status'], registers,
    });
    this.requestSeconds = new Histogram({
      name: `${METRIC_PREFIX}http_request_duration_seconds`, help: 'API request latency, by route pattern and method',
      labelNames: ['route', 'method'], buckets: REQUEST_SECONDS_BUCKETS, registers,
    });
    this.runsStarted = new Counter({
      name: `${METRIC_PREFIX}runs_started_total`, help: 'Runs started, by agent name', labelNames: ['agent'], registers,
    });
    const pools = options.pools ?? {};
    new Gauge({
      name: `${METRIC_PREFIX}db_pool_connections`, help: 'PostgreSQL pool connections in use, idle, and requests waiting for one',
      labelNames: ['pool', 'state'], registers,
      collect() {
        this.reset();
        for (const [pool, stats] of Object.entries(pools)) {
          const { total, idle, waiting } = stats();
          this.set({ pool, state: 'in_use' }, total - idle);
          this.set({ pool, state: 'idle' }, idle);
          this.set({ pool, state: 'waiting' }, waiting);
        }
      },
    });
    if (options.waitingRuns) this.waitingRunsGauge(options.waitingRuns);
  }

  /**
   * Exported by the API only: every API process reads the same rows, so Prometheus takes max (not
   * sum) over them. A failed read leaves the gauge out of that scrape; the other metrics still go.
   */
  private waitingRunsGauge(read: () => Promise<Record<string, number>>): void {
    new Gauge({
      name: `${METRIC_PREFIX}runs_waiting`, help: 'Runs waiting for a person now, by what they wait for (approval, input, budget)',
      labelNames: ['waiting_for'], registers: [this.registry],
      async collect() {
        this.reset();
        const counts = await read().catch(() => undefined);
        for (const [waitingFor, runs] of Object.entries(counts ?? {})) this.set({ waiting_for: waitingFor }, runs);
      },
    });
  }

  /** `route` is the route's pattern (/v1/runs/:id), undefined for a request no route matched. */
  requestEnded(route: string | undefined, method: string, status: number, seconds: number): void {
    const labels = {
      route: route ? this.cap.value('http', 'route', route) : OTHER_LABEL_VALUE,
      method: this.cap.value('http', 'method', method.toUpperCase()),
    };
    this.requests.inc({ ...labels, status: String(status) });
    this.requestSeconds.observe(labels, seconds);
  }

  runStarted(agent: string): void {
    this.runsStarted.inc({ agent: this.cap.value('runs_started', 'agent', agent) });
  }
}
