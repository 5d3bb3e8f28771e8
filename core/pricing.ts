import { z } from 'zod';
import type { Usage } from './messages';

/*
 * What the operator says tokens cost (PRICES_FILE, docs/observability.md "Cost"): USD per million
 * tokens, keyed by provider then model name. The engine has no built-in prices: a model the table
 * does not name is unpriced, and its turns say so (priced: false) rather than counting as free.
 */

const perMillion = z.number().min(0).max(1_000_000);

export const modelPriceSchema = z.strictObject({
  inputPerMillion: perMillion,
  outputPerMillion: perMillion,
  /** input tokens the provider read from its prompt cache; the input price when absent */
  cachedInputPerMillion: perMillion.optional(),
});

export const priceTableSchema = z.record(
  z.string().min(1).max(100),
  z.record(z.string().min(1).max(256), modelPriceSchema).refine((models) => Object.keys(models).length <= 10_000, 'at most 10,000 models'),
).refine((providers) => Object.keys(providers).length <= 100, 'at most 100 providers');

export type ModelPrice = z.infer<typeof modelPriceSchema>;
export type PriceTable = z.infer<typeof priceTableSchema>;

/** What a model's answer was, and what its tokens cost; `costUsd` null: the table does not price the model. */
export interface PricedUsage {
  provider: string;
  model: string;
  costUsd: number | null;
}

/** The cost of one answer of `model` (a turn, or an MCP server's sampling request) by the table the worker has now. */
export function priceUsage(table: PriceTable | undefined, model: { provider: string; name?: string }, usage: Usage): PricedUsage {
  const name = pricedModelName(model);
  const price = priceOf(table, model.provider, name);
  return { provider: model.provider, model: name, costUsd: price ? turnCostUsd(usage, price) : null };
}

/** The name a turn's model is priced under: the scripted provider's model is `scripted`. */
export const pricedModelName = (model: { provider: string; name?: string }): string => model.name ?? model.provider;

/** The price of a provider's model; undefined when the table does not name it. */
export function priceOf(table: PriceTable | undefined, provider: string, model: string): ModelPrice | undefined {
  const models = table && Object.hasOwn(table, provider) ? table[provider] : undefined;
  return models && Object.hasOwn(models, model) ? models[model] : undefined;
}

/**
 * A turn's cost in USD: ((input − cached) × input + cached × cached input + output × output) / 10⁶.
 * Cached input tokens are counted among the input tokens (cache writes are plain input).
 */
export function turnCostUsd(usage: Usage, price: ModelPrice): number {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const cachedPrice = price.cachedInputPerMillion ?? price.inputPerMillion;
  return ((usage.inputTokens - cached) * price.inputPerMillion + cached * cachedPrice + usage.outputTokens * price.outputPerMillion) / 1e6;
}
