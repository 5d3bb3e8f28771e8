import { ApplicationFailure, CancellationScope, condition, isCancellation, setHandler } from '@temporalio/workflow';
import type { DecidedBy } from '../core/approval';
import {
  asksWhenReached, BUDGET_FAILURE, DEFAULT_ASK_TIMEOUT_MS, raisableLimits, raiseLimits,
  type BudgetDecision, type BudgetDecisionResult, type BudgetOutcome, type BudgetStatus, type DecideBudgetInput,
} from '../core/budget-ask';
import { addUsage } from '../core/messages';
import type { RunState } from '../core/run';
import type { EffectiveLimits, LimitName } from '../core/run-limits';
import { decideBudgetUpdate } from './definitions';
import { allocateEvents } from './event-numbers';
import { recording } from './recording';
import { limitBeforeTurn, limitOfCalls, spentCostUsd } from './run-budget';
import type { Later } from './later';
import type { WaitingAttribute } from './waiting-attribute';

/** The request the run waits on: its number, and the person's answer once it came. */
interface Asking {
  seq: number;
  decision?: { decision: BudgetDecision; decidedBy?: DecidedBy };
  /** the outcome is in PostgreSQL: the update may answer */
  recorded: boolean;
}

const alreadyDecided = (seq: number, status: BudgetStatus) => ApplicationFailure.create({
  type: BUDGET_FAILURE.alreadyDecided, nonRetryable: true, details: [status],
  message: `The run's budget request ${seq} was already ${status.replace('_', ' ')}`,
});

/**
 * A run that asks a person for more budget when a limit is reached (limits.onLimit "ask"). The
 * wait is a workflow condition with a timer (limits.askTimeout): no worker slot is held, and a crash
 * of every process loses nothing. The answer arrives as an update, checked first by the API in
 * PostgreSQL; its validator refuses a request already answered, so of two answers one wins.
 */
export function installBudgetAsk(listing: WaitingAttribute): BudgetAsk {
  const ask = new BudgetAsk(listing);
  setHandler(decideBudgetUpdate, (update) => ask.decide(update), {
    validator: ({ seq }) => ask.refuseIfDecided(seq),
  });
  return ask;
}

export class BudgetAsk {
  private asking: Asking | undefined;
  private readonly settled = new Map<number, BudgetStatus>();

  constructor(private readonly listing: WaitingAttribute) {}

  /**
   * The first limit `check` finds reached, once a person has been asked about each as the run's
   * limits allow: undefined when the budget was raised enough, else the limit that stops the run.
   * A value, not a promise, unless a person is asked (workflows/later.ts).
   */
  private untilWithin(
    state: RunState, limits: EffectiveLimits | undefined, check: () => LimitName | undefined,
  ): Later<LimitName | undefined> {
    const limit = check();
    if (!limit || !limits || !asksWhenReached(limits, limit)) return limit;
    return this.askedUntilWithin(state, limits, check, limit);
  }

  private async askedUntilWithin(
    state: RunState, limits: EffectiveLimits, check: () => LimitName | undefined, reached: LimitName,
  ): Promise<LimitName | undefined> {
    for (let limit: LimitName | undefined = reached; limit; limit = check()) {
      if (!asksWhenReached(limits, limit)) return limit;
      if (!(await this.ask(state, limits, limit))) return limit;
    }
    return undefined;
  }

  /** Before a turn: the limit that keeps the run from it, once asked about (limitBeforeTurn). */
  beforeTurn(state: RunState, limits: EffectiveLimits | undefined): Later<LimitName | undefined> {
    return this.untilWithin(state, limits, () => limitBeforeTurn(state, limits));
  }

  /** Before a turn's `requested` calls: the limit that would hold some of them, once asked about. */
  beforeCalls(state: RunState, limits: EffectiveLimits | undefined, requested: number): Later<LimitName | undefined> {
    return this.untilWithin(state, limits, () => limitOfCalls(state, limits, requested));
  }

  async decide({ seq, decision, decidedBy }: DecideBudgetInput): Promise<BudgetDecisionResult> {
    // After a crash the replaying worker may take the update before it has re-created the wait.
    await condition(() => this.asking?.seq === seq || this.settled.has(seq));
    const asking = this.asking;
    if (!asking || asking.seq !== seq) throw alreadyDecided(seq, this.settled.get(seq) ?? 'cancelled');
    if (asking.decision) throw alreadyDecided(seq, 'stop' in asking.decision.decision ? 'stopped' : 'raised');
    asking.decision = { decision, ...(decidedBy ? { decidedBy } : {}) };
    await condition(() => asking.recorded);
    return { seq, status: 'stop' in decision ? 'stopped' : 'raised' };
  }

  refuseIfDecided(seq: number): void {
    const earlier = this.settled.get(seq);
    if (earlier) throw alreadyDecided(seq, earlier);
    const decision = this.asking?.seq === seq ? this.asking.decision?.decision : undefined;
    if (decision) throw alreadyDecided(seq, 'stop' in decision ? 'stopped' : 'raised');
  }

  /** Records the request, waits for an answer or the timeout, records how it ended; true when the budget was raised. */
  private async ask(state: RunState, limits: EffectiveLimits, limitReached: LimitName): Promise<boolean> {
    const seq = allocateEvents(state, 2);
    const asking: Asking = { seq, recorded: false };
    const tokens = addUsage(state.usage, state.childUsage);
    const spent = {
      costUsd: spentCostUsd(state), inputTokens: tokens.inputTokens, outputTokens: tokens.outputTokens, toolCalls: state.toolCallCount,
    };
    const outcome: BudgetOutcome = { runId: state.runId, seq, resolvedSeq: seq + 1, status: 'cancelled' };
    this.asking = asking;
    try {
      await recording.requestBudget({
        runId: state.runId, seq, limitReached, limits: raisableLimits(limits), timeoutMs: limits.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS,
        spent,
      });
      this.listing.set('budget', true);
      const summary = `waiting for a person to raise ${limitReached} or stop the run`;
      await condition(() => asking.decision !== undefined, limits.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS, { summary });
      Object.assign(outcome, answered(asking, limits));
      await recording.recordBudgetOutcome(outcome);
      return outcome.status === 'raised';
    } catch (err) {
      if (isCancellation(err) && asking.decision === undefined) {
        await CancellationScope.nonCancellable(() => recording.recordBudgetOutcome(outcome));
      }
      throw err;
    } finally {
      asking.recorded = true;
      this.settled.set(seq, outcome.status);
      this.asking = undefined;
      this.listing.set('budget', false);
    }
  }
}

/** How an ask ended: raised (the limits are raised in place), stopped, or timed out. */
function answered(asking: Asking, limits: EffectiveLimits): Pick<BudgetOutcome, 'status' | 'added' | 'decidedBy'> {
  const answer = asking.decision;
  if (!answer) return { status: 'timed_out' };
  const by = answer.decidedBy ? { decidedBy: answer.decidedBy } : {};
  if ('stop' in answer.decision) return { status: 'stopped', ...by };
  return { status: 'raised', added: raiseLimits(limits, answer.decision.add), ...by };
}
