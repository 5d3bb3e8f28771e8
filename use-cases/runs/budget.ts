import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  BUDGET_FAILURE, DECIDE_BUDGET_UPDATE, type BudgetDecision, type BudgetStatus, type DecideBudgetInput,
} from '../../core/budget-ask';
import { EngineError } from '../../core/engine-error';
import type { RunView } from '../../core/run-view';
import { latestBudgetRequest, pendingBudgetRequest } from '../../store/budget-requests';
import type { Db } from '../../store/pool';
import { requireRole, type Caller } from '../caller';
import { decidedByOf } from './approvals';
import { missedDeadline, sendDecision } from './decision-update';
import { readRun, requireRunIn, runNotFound } from './runs';

/*
 * A person's answer to a run waiting for budget (limits.onLimit "ask"): raise its limits, which
 * needs the role manage (it spends the tenant's money), or stop it, which needs decide.
 */

export interface BudgetDeps {
  db: Db;
  client: Client;
}

const notWaiting = (runId: string) => new EngineError('conflict', `Run ${runId} does not wait for budget`);
const alreadyAnswered = (runId: string, status: BudgetStatus) =>
  new EngineError('conflict', `Run ${runId}'s budget request was already ${status.replace('_', ' ')}`, { budgetStatus: status });

/**
 * Answers the request the caller's tenant's run waits on: checked against PostgreSQL first (no run:
 * 404; a run that does not wait: 409), then sent to the run's workflow as an update whose validator
 * refuses a request answered already. Answers with the run once the answer is recorded.
 */
export async function decideBudgetFor(deps: BudgetDeps, caller: Caller, runId: string, decision: BudgetDecision): Promise<RunView> {
  requireRole(caller, 'stop' in decision ? 'decide' : 'manage');
  await requireRunIn(deps.db, caller.tenantId, runId);
  const pending = await pendingBudgetRequest(deps.db, runId);
  if (!pending) throw notWaiting(runId);
  const input: DecideBudgetInput = { seq: pending.seq, decision, decidedBy: decidedByOf(caller) };
  try {
    await sendDecision(deps.client, runId, DECIDE_BUDGET_UPDATE, input);
  } catch (err) {
    throw await explainFailure(deps.db, runId, err);
  }
  const run = await readRun(deps.db, runId);
  if (!run) throw runNotFound(runId);
  return run;
}

async function explainFailure(db: Db, runId: string, err: unknown): Promise<unknown> {
  const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
  if (cause instanceof ApplicationFailure && cause.type === BUDGET_FAILURE.alreadyDecided) {
    return alreadyAnswered(runId, (cause.details?.[0] as BudgetStatus | undefined) ?? 'cancelled');
  }
  // The run ended, or the request timed out, between the check and the update.
  const latest = await latestBudgetRequest(db, runId);
  if (latest && latest.status !== 'pending') return alreadyAnswered(runId, latest.status);
  if (err instanceof WorkflowNotFoundError) return notWaiting(runId);
  if (missedDeadline(err)) {
    return new EngineError('unavailable', 'No worker took the answer in time; the run waits on, try again shortly');
  }
  return err;
}
