import type { PendingBudget, RaisableLimits } from './types';

/*
 * A run that waits for budget (limits.onLimit "ask"): its figures in words, and the page's check
 * of a raise before the API's (POST /v1/runs/:id/budget, core/run-limits.ts budgetAddSchema).
 */

export const RAISABLE = ['maxCostUsd', 'maxToolCalls', 'maxInputTokens', 'maxOutputTokens'] as const;
export type Raisable = typeof RAISABLE[number];
export type BudgetAdd = Partial<Record<Raisable, number>>;

/** What each limit counts, in words. */
export const LIMIT_WORDS: Record<Raisable, string> = {
  maxCostUsd: 'cost (USD)', maxToolCalls: 'tool calls', maxInputTokens: 'input tokens', maxOutputTokens: 'output tokens',
};

/** The most one raise may add to each limit, as the API allows. */
const MOST: Record<Raisable, number> = { maxCostUsd: 1_000_000, maxToolCalls: 1_000_000, maxInputTokens: 1e9, maxOutputTokens: 1e9 };

const isRaisable = (name: string): name is Raisable => (RAISABLE as readonly string[]).includes(name);

/**
 * USD as a person reads it: cents from a dollar up; below, three significant digits, so that a
 * limit of $0.000001 and a spend of $0.0000435 stay apart (never rounded to $0.00).
 */
export function usd(amount: number): string {
  if (!Number.isFinite(amount)) return `$${amount}`;
  if (amount === 0) return '$0.00';
  const size = Math.abs(amount);
  if (size >= 1) return `${amount < 0 ? '-' : ''}$${size.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  if (size < 1e-12) return `$${amount.toExponential(1)}`;
  const decimals = Math.min(14, 2 - Math.floor(Math.log10(size)));
  // At least two decimals kept; trailing zeros past them dropped ($0.50, $0.000001).
  return `${amount < 0 ? '-' : ''}$${size.toFixed(decimals).replace(/(\.\d\d\d*?)0+$/, '$1')}`;
}

/** A count (tokens, tool calls), grouped by thousands. */
export const count = (n: number): string => n.toLocaleString('en-US');

/** A limit's value in its unit. */
export const limitValue = (name: string, value: number): string => (name === 'maxCostUsd' ? usd(value) : count(value));

/** What the run had spent of what `name` limits. */
export function spentOf(budget: PendingBudget, name: Raisable): number {
  const { spent } = budget;
  const byLimit: Record<Raisable, number> = {
    maxCostUsd: spent.costUsd, maxToolCalls: spent.toolCalls, maxInputTokens: spent.inputTokens, maxOutputTokens: spent.outputTokens,
  };
  return byLimit[name];
}

/** Rounded up to two significant digits: a figure a person would type. */
function roundUp(value: number): number {
  if (value <= 0) return value;
  const step = 10 ** (Math.floor(Math.log10(value)) - 1);
  return Number((Math.ceil(value / step - 1e-9) * step).toPrecision(2));
}

/**
 * What the form offers to add to the limit reached: as much again as the limit, or, when the run has
 * spent past it, enough for it to spend as much again as it has spent (a raise that leaves the limit
 * reached would only ask again). The other limits start empty: raised only when a person says so.
 */
export function raiseSuggestion(budget: PendingBudget): Record<string, string> {
  const suggested: Record<string, string> = {};
  for (const name of RAISABLE) {
    const limit = budget.limits[name];
    if (limit === undefined) continue;
    if (name !== budget.limitReached) {
      suggested[name] = '';
      continue;
    }
    const more = Math.max(limit, 2 * spentOf(budget, name) - limit);
    suggested[name] = name === 'maxCostUsd' ? formatAmount(roundUp(more)) : String(Math.max(1, Math.ceil(more)));
  }
  return suggested;
}

/** A number as plain decimals (never 1e-7), for a field a person edits. */
const formatAmount = (value: number): string => (value >= 1e-6 ? String(value) : value.toFixed(12).replace(/0+$/, ''));

/** The limits set on the request, in the API's order. */
export const raisableSet = (limits: RaisableLimits): Raisable[] => RAISABLE.filter((name) => limits[name] !== undefined);

/**
 * The page's check of a raise: each amount given positive, within the API's bounds, a whole number
 * for counts; at least one. Empty fields are not sent. Answers the body's `add` or the errors by field.
 */
export function checkRaise(limits: RaisableLimits, values: Record<string, string>): { add?: BudgetAdd; errors: Record<string, string> } {
  const add: BudgetAdd = {};
  const errors: Record<string, string> = {};
  for (const name of raisableSet(limits)) {
    const text = (values[name] ?? '').trim();
    if (!text) continue;
    const amount = Number(text);
    if (!Number.isFinite(amount) || amount <= 0) errors[name] = 'must be a number above 0';
    else if (name !== 'maxCostUsd' && !Number.isInteger(amount)) errors[name] = 'must be a whole number';
    else if (amount > MOST[name]) errors[name] = `must be at most ${count(MOST[name])}`;
    else add[name] = amount;
  }
  if (Object.keys(errors).length > 0) return { errors };
  if (Object.keys(add).length === 0) return { errors: { form: 'Give an amount to add to at least one limit.' } };
  return { add, errors };
}

/** What the run waits for, in words: the limit it reached, with its value. */
export function budgetWords(budget: PendingBudget): string {
  const name = budget.limitReached;
  const value = isRaisable(name) ? budget.limits[name] : undefined;
  const limit = isRaisable(name) && value !== undefined
    ? `its limit on ${LIMIT_WORDS[name]}, ${name} ${limitValue(name, value)}` : `its limit ${name}`;
  return `Waiting for a person to raise the budget or stop the run: it reached ${limit}`;
}

/** What a raise added, in words. */
export const addedWords = (add: BudgetAdd): string =>
  raisableSet(add).map((name) => `${name} +${limitValue(name, add[name]!)}`).join(', ');
