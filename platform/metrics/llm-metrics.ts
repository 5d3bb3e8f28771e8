import { Counter, Histogram, type Registry } from 'prom-client';
import type { Usage } from '../../core/messages';
import type { LabelCap } from './label-cap';
import { METRIC_PREFIX } from './registry';

/** The model a turn asked: its provider and its name as priced (core/pricing.ts pricedModelName). */
export interface TurnModel {
  provider: string;
  model: string;
}

/** A turn whose reply was recorded, counted once, right after the commit that wrote it. */
export interface TurnRecord extends TurnModel {
  usage: Usage;
  /** the turn's priced cost (core/pricing.ts); null: the price table does not name the model, and it adds nothing */
  costUsd: number | null;
  /** the run's tenant's name, never its id */
  tenant?: string;
  /** from the request to the model's whole reply */
  seconds: number;
  /** from the request to the first streamed chunk; absent when the reply came without streaming */
  firstChunkSeconds?: number;
}

/** What an LLM turn's activity records. */
export interface TurnMetrics {
  turnRecorded(turn: TurnRecord): void;
  /** a request to the model failed (each attempt; a cancelled one is not a failure) */
  turnFailed(model: TurnModel): void;
  /** a streamed chunk of the model's words went out as `text_delta`, `seconds` after it arrived */
  textPublished(seconds: number): void;
}

const TURN_SECONDS_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300];
const FIRST_CHUNK_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
const LAG_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The worker's metrics of LLM turns: turns, their duration and first chunk, tokens, cost, and the lag of streamed words. */
export class LlmMetrics implements TurnMetrics {
  private readonly turns: Counter<'provider' | 'model' | 'outcome'>;
  private readonly turnSeconds: Histogram<'provider' | 'model'>;
  private readonly firstChunkSeconds: Histogram<'provider' | 'model'>;
  private readonly tokens: Counter<'provider' | 'model' | 'kind'>;
  private readonly cost: Counter<'model' | 'tenant'>;
  private readonly lag: Histogram;

  constructor(registry: Registry, private readonly cap: LabelCap) {
    const registers = [registry];
    const byModel = ['provider', 'model'] as const;
    this.turns = new Counter({
      name: `${METRIC_PREFIX}llm_turns_total`, help: 'LLM turns: recorded replies (ok) and failed requests (error), by provider and model',
      labelNames: [...byModel, 'outcome'], registers,
    });
    this.turnSeconds = new Histogram({
      name: `${METRIC_PREFIX}llm_turn_duration_seconds`, help: 'Time from an LLM request to its whole reply, of recorded turns',
      labelNames: byModel, buckets: TURN_SECONDS_BUCKETS, registers,
    });
    this.firstChunkSeconds = new Histogram({
      name: `${METRIC_PREFIX}llm_time_to_first_token_seconds`, help: 'Time from an LLM request to the first streamed chunk of its reply',
      labelNames: byModel, buckets: FIRST_CHUNK_SECONDS_BUCKETS, registers,
    });
    this.tokens = new Counter({
      name: `${METRIC_PREFIX}llm_tokens_total`, help: 'Tokens of recorded turns, by kind (cached_input is part of input)',
      labelNames: [...byModel, 'kind'], registers,
    });
    this.cost = new Counter({
      name: `${METRIC_PREFIX}cost_usd_total`,
      help: 'Priced cost of recorded turns in USD, by model and tenant name (unpriced turns add nothing)',
      labelNames: ['model', 'tenant'], registers,
    });
    this.lag = new Histogram({
      name: `${METRIC_PREFIX}stream_lag_seconds`,
      help: 'Time from a chunk of the model\'s words arriving to its text_delta being published',
      buckets: LAG_SECONDS_BUCKETS, registers,
    });
  }

  turnRecorded(turn: TurnRecord): void {
    const labels = this.modelLabels('llm_turns', turn);
    this.turns.inc({ ...labels, outcome: 'ok' });
    this.turnSeconds.observe(labels, Math.max(0, turn.seconds));
    if (turn.firstChunkSeconds !== undefined) this.firstChunkSeconds.observe(labels, Math.max(0, turn.firstChunkSeconds));
    const { inputTokens, outputTokens, cachedInputTokens } = turn.usage;
    this.tokens.inc({ ...labels, kind: 'input' }, inputTokens);
    this.tokens.inc({ ...labels, kind: 'output' }, outputTokens);
    this.tokens.inc({ ...labels, kind: 'cached_input' }, cachedInputTokens ?? 0);
    if (turn.costUsd !== null) {
      const labels = { model: this.cap.value('cost', 'model', turn.model), tenant: this.cap.value('cost', 'tenant', turn.tenant) };
      this.cost.inc(labels, turn.costUsd);
    }
  }

  turnFailed(model: TurnModel): void {
    this.turns.inc({ ...this.modelLabels('llm_turns', model), outcome: 'error' });
  }

  textPublished(seconds: number): void {
    this.lag.observe(Math.max(0, seconds));
  }

  private modelLabels(metric: string, m: TurnModel) {
    return { provider: this.cap.value(metric, 'provider', m.provider), model: this.cap.value(metric, 'model', m.model) };
  }
}
