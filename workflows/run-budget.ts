import { formatDuration } from '../core/duration';
import { addUsage } from '../core/messages';
import type { RunState } from '../core/run';
import type { EffectiveLimits, LimitName, RunLimits } from '../core/run-limits';
import { durationOverBudgetText, toolCallOverBudgetText } from '../core/tool-texts';
import type { ToolAvailability, ToolCallRef, ToolOutcome } from '../core/tool-call';
import { routeToolCall } from './tool-kinds';
import { recording } from './recording';
import type { Later } from './later';


/**
 * A run's budget (core/run-limits.ts), as the run workflow checks it: tokens after each turn (reached
 * or passed: no next turn), tool calls before each call (a turn's calls past the limit are not made),
 * time before each turn and each turn's calls (waits for a person count: it is time since the run's
 * start, in workflow time). A stopped run ends completed, stopReason "budget", with the limit it reached.
 */

const timeUp = (limits: EffectiveLimits, state: RunState) =>
  limits.maxDurationMs !== undefined && Date.now() - state.startedAtMs >= limits.maxDurationMs;

/** The run's tokens and its sub-agents': one budget. */
const spentTokens = (state: RunState) => addUsage(state.usage, state.childUsage);

/** The run's priced cost and its sub-agents': one budget. */
export const spentCostUsd = (state: RunState) => (state.costUsd ?? 0) + (state.childCostUsd ?? 0);

/** The limit that keeps the run from its next LLM turn, if one does. */
export function limitBeforeTurn(state: RunState, limits: EffectiveLimits | undefined): LimitName | undefined {
  if (!limits) return undefined;
  const spent = spentTokens(state);
  if (limits.maxInputTokens !== undefined && spent.inputTokens >= limits.maxInputTokens) return 'maxInputTokens';
  if (limits.maxOutputTokens !== undefined && spent.outputTokens >= limits.maxOutputTokens) return 'maxOutputTokens';
  if (limits.maxCostUsd !== undefined && spentCostUsd(state) >= limits.maxCostUsd) return 'maxCostUsd';
  if (timeUp(limits, state)) return 'maxDuration';
  return undefined;
}

/** The next turn's cap on output tokens: what the budget has left (at least 1: a spent budget has no next turn). */
export function turnMaxTokens(state: RunState, limits: EffectiveLimits | undefined): { maxTokens?: number } {
  return limits?.maxOutputTokens === undefined ? {} : { maxTokens: Math.max(1, limits.maxOutputTokens - spentTokens(state).outputTokens) };
}

/**
 * What is left of the run's budget for a sub-agent it starts: the tool calls after this one, the
 * tokens not spent, the time not passed (each at least its smallest value: a spent budget stops the
 * child at its first check).
 */
export function budgetLeft(state: RunState, limits: EffectiveLimits | undefined): RunLimits | undefined {
  if (!limits) return undefined;
  const spent = spentTokens(state);
  const left: RunLimits = {};
  if (limits.maxToolCalls !== undefined) left.maxToolCalls = Math.max(0, limits.maxToolCalls - state.toolCallCount - 1);
  if (limits.maxInputTokens !== undefined) left.maxInputTokens = Math.max(1, limits.maxInputTokens - spent.inputTokens);
  if (limits.maxOutputTokens !== undefined) left.maxOutputTokens = Math.max(1, limits.maxOutputTokens - spent.outputTokens);
  if (limits.maxCostUsd !== undefined) left.maxCostUsd = Math.max(1e-9, limits.maxCostUsd - spentCostUsd(state));
  if (limits.maxDurationMs !== undefined) left.maxDuration = `${Math.max(1000, limits.maxDurationMs - (Date.now() - state.startedAtMs))}ms`;
  return Object.keys(left).length > 0 ? left : undefined;
}

/** How many of a turn's calls the budget lets the run make, in the LLM's order; the limit that stops the others. */
function callsAllowed(
  state: RunState, limits: EffectiveLimits | undefined, requested: number,
): { allowed: number; limit?: LimitName; text?: string } {
  if (!limits) return { allowed: requested };
  if (timeUp(limits, state)) {
    return { allowed: 0, limit: 'maxDuration', text: durationOverBudgetText(formatDuration(limits.maxDurationMs!)) };
  }
  if (limits.maxToolCalls === undefined) return { allowed: requested };
  const left = Math.max(0, limits.maxToolCalls - state.toolCallCount);
  if (left >= requested) return { allowed: requested };
  return { allowed: left, limit: 'maxToolCalls', text: toolCallOverBudgetText(limits.maxToolCalls) };
}

/** The limit that would keep some of a turn's `requested` calls from being made, if one would. */
export const limitOfCalls = (state: RunState, limits: EffectiveLimits | undefined, requested: number): LimitName | undefined =>
  callsAllowed(state, limits, requested).limit;

export interface BudgetedCall {
  ref: Omit<ToolCallRef, 'type'>;
  outcome?: ToolOutcome;
  notMade?: LimitName;
}

/** Marks the calls past the budget as not made, recording what the LLM reads for each (the turn stays whole for the thread). */
export function holdCallsOverBudget(
  state: RunState, limits: EffectiveLimits | undefined, tools: ToolAvailability, calls: BudgetedCall[],
): Later<void> {
  const { allowed, limit, text } = callsAllowed(state, limits, calls.length);
  if (!limit || !text) return undefined;
  return Promise.all(calls.slice(allowed).map((call) => {
    call.notMade = limit;
    const type = routeToolCall(call.ref.name, tools).type;
    return recording.recordToolResult({ ...call.ref, type, status: 'error', content: text }).then((outcome) => {
      call.outcome = outcome;
    });
  })).then(() => undefined);
}

/** The limit that stopped some of the turn's calls, if one did: the run stops after the turn. */
export const limitOfTurn = (calls: BudgetedCall[]): LimitName | undefined => calls.find((c) => c.notMade)?.notMade;

/** Ends the run by its budget. */
export function stopForBudget(state: RunState, limit: LimitName): undefined {
  Object.assign(state, { status: 'completed', stopReason: 'budget', limitReached: limit });
  return undefined;
}
