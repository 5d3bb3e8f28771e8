import type { DecidedBy } from './approval';
import type { BudgetAdd, EffectiveLimits, LimitName } from './run-limits';

/*
 * A run whose limits say onLimit "ask" (core/run-limits.ts): a reached limit makes it wait for a
 * person, like an approval, who raises its budget (the run goes on) or stops it (stopReason
 * "budget"). Pure: the workflow, its activities and the API share these types and names.
 */

/** How long a run that asks for more budget waits for a person, unless limits.askTimeout says otherwise. */
export const DEFAULT_ASK_TIMEOUT_MS = 86_400_000;

/** The run workflow's update that answers a run waiting for budget. */
export const DECIDE_BUDGET_UPDATE = 'decideBudget';

/** The failure types the update answers with; the API maps them to 409. */
export const BUDGET_FAILURE = {
  alreadyDecided: 'BudgetAlreadyDecided',
} as const;

/** How a budget request ended. */
export type BudgetStatus = 'raised' | 'stopped' | 'timed_out' | 'cancelled';

/** What the run had spent when it asked, its sub-agents' included. */
export interface BudgetSpent {
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
}

/** The limits a person may raise, as they stood when the run asked. */
export type RaisableLimits = Pick<EffectiveLimits, 'maxCostUsd' | 'maxToolCalls' | 'maxInputTokens' | 'maxOutputTokens'>;

export interface BudgetRequest {
  runId: string;
  /** the number of its budget_requested event: the request's id within the run */
  seq: number;
  limitReached: LimitName;
  spent: BudgetSpent;
  limits: RaisableLimits;
  timeoutMs: number;
}

export interface BudgetOutcome {
  runId: string;
  /** the request's budget_requested number */
  seq: number;
  /** budget_resolved's number */
  resolvedSeq: number;
  status: BudgetStatus;
  added?: BudgetAdd;
  decidedBy?: DecidedBy;
}

/** A person's answer: raise the named limits by these amounts, or stop the run. */
export type BudgetDecision = { add: BudgetAdd } | { stop: true };

export interface DecideBudgetInput {
  /** the request answered (its budget_requested number), as the API read it from PostgreSQL */
  seq: number;
  decision: BudgetDecision;
  decidedBy?: DecidedBy;
}

export interface BudgetDecisionResult {
  seq: number;
  status: 'raised' | 'stopped';
}

const RAISABLE = ['maxCostUsd', 'maxToolCalls', 'maxInputTokens', 'maxOutputTokens'] as const;

/** The raisable limits of `limits` that are set. */
export function raisableLimits(limits: EffectiveLimits): RaisableLimits {
  const out: RaisableLimits = {};
  for (const key of RAISABLE) if (limits[key] !== undefined) out[key] = limits[key];
  return out;
}

/**
 * Raises `limits` in place by `add`: a limit that is not set is no limit, and adding to it changes
 * nothing. Answers what was added.
 */
export function raiseLimits(limits: EffectiveLimits, add: BudgetAdd): BudgetAdd {
  const added: BudgetAdd = {};
  for (const key of RAISABLE) {
    const more = add[key];
    const now = limits[key];
    if (more === undefined || now === undefined) continue;
    limits[key] = now + more;
    added[key] = more;
  }
  return added;
}

/** The limits a reached limit asks about instead of stopping: all but maxDuration, which always stops. */
export const asksWhenReached = (limits: EffectiveLimits | undefined, limit: LimitName): boolean =>
  limits?.onLimit === 'ask' && limit !== 'maxDuration';
