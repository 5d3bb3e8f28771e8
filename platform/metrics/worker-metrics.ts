import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LabelCap } from './label-cap';
import { LlmMetrics, type TurnMetrics, type TurnModel, type TurnRecord } from './llm-metrics';
import { METRIC_PREFIX, processRegistry } from './registry';

export interface RunEnd {
  status: string;
  stopReason: string;
  /** the agent's name, never its id */
  agent: string;
  /** from the run's creation to its recorded end */
  seconds: number;
}

export interface ToolCallEnd {
  /** the integration's name, never its id; absent for a tool of no integration */
  integration?: string;
  type: string;
  outcome: 'ok' | 'error';
  seconds: number;
}

/** What activities record, once per recorded end (a retried activity that found the end written records nothing). */
export interface RunEndMetrics extends TurnMetrics {
  runEnded(end: RunEnd): void;
  toolCallEnded(end: ToolCallEnd): void;
}

export interface WorkerMetricsOptions {
  maxLabelValues: number;
  /** the integration name of each MCP connection open now, one per connection (McpPool.openConnections), read at each scrape */
  mcpConnections?: () => string[];
}

/** Seconds from a time recorded in the database (a run's creation) to now. */
export const secondsSince = (time: string | Date) => (Date.now() - new Date(time).getTime()) / 1000;

const RUN_SECONDS_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
const TOOL_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The worker process's metrics: runs ended, tool calls, LLM turns, MCP connections. */
export class WorkerMetrics implements RunEndMetrics {
  readonly registry: Registry = processRegistry('worker');
  private readonly cap: LabelCap;
  private readonly runsEnded: Counter<'status' | 'stop_reason' | 'agent'>;
  private readonly runSeconds: Histogram<'status'>;
  private readonly toolCalls: Counter<'integration' | 'type' | 'outcome'>;
  private readonly toolSeconds: Histogram<'integration' | 'type'>;
  private readonly llm: LlmMetrics;

  constructor(options: WorkerMetricsOptions) {
    this.cap = new LabelCap(options.maxLabelValues);
    this.llm = new LlmMetrics(this.registry, this.cap);
    const registers = [this.registry];
    this.runsEnded = new Counter({
      name: `${METRIC_PREFIX}runs_ended_total`, help: 'Runs ended, by status, stop reason and agent name',
      labelNames: ['status', 'stop_reason', 'agent'], registers,
    });
    this.runSeconds = new Histogram({
      name: `${METRIC_PREFIX}run_duration_seconds`, help: 'Time from a run\'s start to its recorded end, by status',
      labelNames: ['status'], buckets: RUN_SECONDS_BUCKETS, registers,
    });
    this.toolCalls = new Counter({
      name: `${METRIC_PREFIX}tool_calls_total`, help: 'Tool calls answered, by integration name, tool type and outcome',
      labelNames: ['integration', 'type', 'outcome'], registers,
    });
    this.toolSeconds = new Histogram({
      name: `${METRIC_PREFIX}tool_call_duration_seconds`, help: 'Tool call duration, by integration name and tool type',
      labelNames: ['integration', 'type'], buckets: TOOL_SECONDS_BUCKETS, registers,
    });
    this.mcpConnectionsGauge(options.mcpConnections);
  }

  /** Open MCP client connections by integration name, counted at each scrape. */
  private mcpConnectionsGauge(open: (() => string[]) | undefined): void {
    const cap = this.cap;
    new Gauge({
      name: `${METRIC_PREFIX}mcp_connections`, help: 'MCP client connections open in this worker, by integration name',
      labelNames: ['integration'], registers: [this.registry],
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const name of open?.() ?? []) {
          const integration = cap.value('mcp_connections', 'integration', name);
          counts.set(integration, (counts.get(integration) ?? 0) + 1);
        }
        for (const [integration, count] of counts) this.set({ integration }, count);
      },
    });
  }

  runEnded(end: RunEnd): void {
    const status = this.cap.value('runs_ended', 'status', end.status);
    const stopReason = this.cap.value('runs_ended', 'stop_reason', end.stopReason);
    this.runsEnded.inc({ status, stop_reason: stopReason, agent: this.cap.value('runs_ended', 'agent', end.agent) });
    this.runSeconds.observe({ status }, Math.max(0, end.seconds));
  }

  toolCallEnded(end: ToolCallEnd): void {
    const labels = {
      integration: this.cap.value('tool_calls', 'integration', end.integration), type: this.cap.value('tool_calls', 'type', end.type),
    };
    this.toolCalls.inc({ ...labels, outcome: end.outcome });
    this.toolSeconds.observe(labels, Math.max(0, end.seconds));
  }

  turnRecorded(turn: TurnRecord): void {
    this.llm.turnRecorded(turn);
  }

  turnFailed(model: TurnModel): void {
    this.llm.turnFailed(model);
  }

  textPublished(seconds: number): void {
    this.llm.textPublished(seconds);
  }
}
