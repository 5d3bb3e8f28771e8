import type { BudgetOutcome, BudgetRequest } from '../core/budget-ask';
import { insertBudgetRequest, resolveBudgetRequest } from '../store/budget-requests';
import { inTransaction } from '../store/pool';
import { appendEvent } from '../store/runs/events';
import type { ActivityDeps } from './deps';

/**
 * The two writes around a run's wait for budget (limits.onLimit "ask"). Local and idempotent: the
 * row is keyed by the request's number, the events by the numbers the workflow allocated.
 */
export function createBudgetRequestActivities({ db, logger }: ActivityDeps) {
  return {
    async requestBudget(input: BudgetRequest): Promise<{ expiresAt: string }> {
      const row = await inTransaction(db, async (tx) => {
        const stored = await insertBudgetRequest(tx, input);
        await appendEvent(tx, input.runId, input.seq, 'budget_requested', {
          limitReached: stored.limitReached, spent: stored.spent, limits: stored.limits,
          requestedAt: stored.requestedAt, expiresAt: stored.expiresAt,
        });
        return stored;
      });
      logger.info({ runId: input.runId, limitReached: input.limitReached, expiresAt: row.expiresAt }, 'run waits for budget');
      return { expiresAt: row.expiresAt };
    },

    async recordBudgetOutcome(input: BudgetOutcome): Promise<void> {
      await inTransaction(db, async (tx) => {
        // The row keeps its first outcome (a finishRun may have cancelled it first).
        const row = await resolveBudgetRequest(tx, input.runId, input.seq, input);
        await appendEvent(tx, input.runId, input.resolvedSeq, 'budget_resolved', {
          status: row?.status ?? input.status, added: row ? row.added : input.added ?? null,
          decidedBy: row ? row.decidedBy : input.decidedBy ?? null,
        });
      });
      logger.info({ runId: input.runId, status: input.status }, 'run budget request resolved');
    },
  };
}
