import { z } from 'zod';
import { DURATION_PATTERN, parseDuration } from './duration';

/**
 * A run's budget: an agent's `limits`, which a run's own (given when it starts) can only tighten.
 * Pure: the workflow reads the effective limits (types only: the workflow bundle carries no zod),
 * the API the schema. What the LLM reads when the budget refuses a call is in tool-texts.ts.
 */

const MAX_DURATION_MS = 30 * 86_400_000;
const MAX_ASK_TIMEOUT_MS = 7 * 86_400_000;

/**
 * The tool calls of one turn that run when no limit says otherwise; the most a limit may allow
 * stays well below Temporal's 2,000 activities pending at once (a turn's calls run together).
 */
export const DEFAULT_MAX_TOOL_CALLS_PER_TURN = 128;
const MOST_TOOL_CALLS_PER_TURN = 1000;
const tokens = z.int().min(1).max(1_000_000_000);

/** A maxDuration from 1 s to 30 days. */
function isRunDuration(text: string): boolean {
  const ms = parseDuration(text);
  return ms !== undefined && ms >= 1000 && ms <= MAX_DURATION_MS;
}

/** An askTimeout from 1 s to 7 days. */
function isAskTimeout(text: string): boolean {
  const ms = parseDuration(text);
  return ms !== undefined && ms >= 1000 && ms <= MAX_ASK_TIMEOUT_MS;
}

export const runLimitsSchema = z.strictObject({
  maxToolCalls: z.int().min(0).max(1_000_000).optional()
    .describe('tool calls the run may make in all; a call that would pass it is not made and the run stops'),
  maxToolCallsPerTurn: z.int().min(1).max(MOST_TOOL_CALLS_PER_TURN).optional()
    .describe(`tool calls of one turn that run (default ${DEFAULT_MAX_TOOL_CALLS_PER_TURN}), the first in the model's order; `
      + 'each later one is answered "Too many tool calls in one turn", and the run goes on'),
  maxInputTokens: tokens.optional()
    .describe('input tokens of all the run\'s LLM turns; reached after a turn, the run stops before the next'),
  maxOutputTokens: tokens.optional()
    .describe('output tokens of all its turns; reached after a turn, the run stops; each turn\'s maxTokens is capped at what is left'),
  maxDuration: z.string().max(32).regex(new RegExp(DURATION_PATTERN))
    .refine(isRunDuration, 'must be a duration from 1s to 30d')
    .optional()
    .describe('"10m", "2h": from the run\'s start, waits for a person included; past it, the run stops before its next turn or tool call'),
  maxCostUsd: z.number().positive().max(1_000_000).optional()
    .describe('USD the run\'s LLM turns (and its sub-agents\') may cost, from the operator\'s price table (PRICES_FILE); '
      + 'reached after a turn, the run stops (or asks, with onLimit "ask") before the next; its model must be priced'),
  onLimit: z.enum(['stop', 'ask']).optional()
    .describe('"stop" (default): a reached limit ends the run. "ask": it waits for a person to add budget or stop it '
      + '(POST /v1/runs/{id}/budget), listed as waiting for "budget"; maxDuration always stops. A run may turn its agent\'s '
      + '"ask" into "stop", never the reverse'),
  askTimeout: z.string().max(32).regex(new RegExp(DURATION_PATTERN))
    .refine(isAskTimeout, 'must be a duration from 1s to 7d')
    .optional()
    .describe('with onLimit "ask": how long the run waits for a person before it stops (default "24h", at most "7d")'),
  maxChildrenAtOnce: z.int().min(1).max(32).optional().describe('sub-agent runs of one run running at once (default 4); more calls wait'),
  maxDescendants: z.int().min(0).max(1000).optional()
    .describe('runs a root run may start below it, at every depth (default 20); a root\'s limit holds for its whole tree'),
}).meta({ id: 'RunLimits' });

export type RunLimits = z.infer<typeof runLimitsSchema>;

/** The limit that stopped a run (`limitReached`), by its name in RunLimits. */
export type LimitName = Exclude<keyof RunLimits, 'onLimit' | 'askTimeout'>;

/** The limits a person may raise when a run asks (POST /v1/runs/:id/budget {add}). */
export const budgetAddSchema = z.strictObject({
  maxCostUsd: z.number().positive().max(1_000_000).optional(),
  maxToolCalls: z.int().min(1).max(1_000_000).optional(),
  maxInputTokens: tokens.optional(),
  maxOutputTokens: tokens.optional(),
}).refine((add) => Object.keys(add).length > 0, 'name at least one limit to raise').meta({ id: 'BudgetAdd' });

export type BudgetAdd = z.infer<typeof budgetAddSchema>;

/** The limits in force, durations in milliseconds. */
export interface EffectiveLimits {
  maxToolCalls?: number;
  maxToolCallsPerTurn?: number;
  maxInputTokens?: number;
  maxOutputTokens?: number;
  maxDurationMs?: number;
  maxCostUsd?: number;
  /** present when a reached limit asks a person (the agent's "ask", not turned into "stop" by the run) */
  onLimit?: 'ask';
  askTimeoutMs?: number;
  maxChildrenAtOnce?: number;
  maxDescendants?: number;
}

const smaller = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
const durationMs = (text: string | undefined) => (text === undefined ? undefined : parseDuration(text));

/** Each limit is the smaller of the agent's and the run's: a run's input can tighten its agent's budget, never widen it. */
export function effectiveLimits(agent: RunLimits | null | undefined, run: RunLimits | null | undefined): EffectiveLimits {
  const out: EffectiveLimits = {
    maxToolCalls: smaller(agent?.maxToolCalls, run?.maxToolCalls),
    maxToolCallsPerTurn: smaller(agent?.maxToolCallsPerTurn, run?.maxToolCallsPerTurn),
    maxInputTokens: smaller(agent?.maxInputTokens, run?.maxInputTokens),
    maxOutputTokens: smaller(agent?.maxOutputTokens, run?.maxOutputTokens),
    maxDurationMs: smaller(durationMs(agent?.maxDuration), durationMs(run?.maxDuration)),
    maxCostUsd: smaller(agent?.maxCostUsd, run?.maxCostUsd),
    onLimit: agent?.onLimit === 'ask' && run?.onLimit !== 'stop' ? 'ask' : undefined,
    askTimeoutMs: smaller(durationMs(agent?.askTimeout), durationMs(run?.askTimeout)),
    maxChildrenAtOnce: smaller(agent?.maxChildrenAtOnce, run?.maxChildrenAtOnce),
    maxDescendants: smaller(agent?.maxDescendants, run?.maxDescendants),
  };
  for (const key of Object.keys(out) as (keyof EffectiveLimits)[]) if (out[key] === undefined) delete out[key];
  return out;
}
