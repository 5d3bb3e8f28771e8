import type { ApprovalKeyKind, ApprovalResolver, ApprovalStatus, DecidedBy } from '../core/approval';
import type { ToolCallRef } from '../core/tool-call';
import { insertPendingApproval, resolveApproval } from '../store/approvals';
import { inTransaction } from '../store/pool';
import { appendEvent } from '../store/runs/events';
import type { ActivityDeps } from './deps';

/** A call waiting for approval: the call by reference, and the two event numbers the workflow allocated for it. */
export interface ApprovalRef extends ToolCallRef {
  integrationId: string | null;
  /** seqs of approval_requested and approval_resolved */
  requestedSeq: number;
  resolvedSeq: number;
}

export interface ApprovalRequest extends ApprovalRef {
  timeoutMs: number;
}

export interface ApprovalOutcome extends ApprovalRef {
  status: ApprovalStatus;
  reason?: string;
  resolvedBy: ApprovalResolver;
  keyKind?: ApprovalKeyKind;
  /** the person (the API caller's principal) who decided; absent for timeouts, cancellations and /mcp */
  decidedBy?: DecidedBy;
}

/**
 * The two writes around a wait for approval. Local and idempotent: the row is keyed by the call's
 * place in the transcript, the events by the numbers the workflow allocated.
 */
export function createApprovalActivities({ db, logger }: ActivityDeps) {
  return {
    async requestApproval(input: ApprovalRequest): Promise<{ expiresAt: string }> {
      const { runId, turn, index, toolCallId, name, integrationId } = input;
      const row = await inTransaction(db, async (tx) => {
        const stored = await insertPendingApproval(tx, {
          runId, turn, slot: index + 1, toolCallId, name, integrationId, timeoutMs: input.timeoutMs,
        });
        await appendEvent(tx, runId, input.requestedSeq, 'approval_requested', {
          turn, index, toolCallId, name, integrationId, requestedAt: stored.requestedAt, expiresAt: stored.expiresAt,
        });
        return stored;
      });
      logger.info({ runId, toolCallId, tool: name, expiresAt: row.expiresAt }, 'tool call waits for approval');
      return { expiresAt: row.expiresAt };
    },

    async recordApprovalOutcome(input: ApprovalOutcome): Promise<void> {
      const { runId, turn, index, toolCallId, name, integrationId } = input;
      await inTransaction(db, async (tx) => {
        // The row keeps its first resolution, so a retry (or a finishRun that got there first) reports that one.
        const row = await resolveApproval(tx, runId, turn, index + 1, input);
        const status = row?.status ?? input.status;
        await appendEvent(tx, runId, input.resolvedSeq, 'approval_resolved', {
          turn, toolCallId, name, integrationId, status,
          decision: status === 'approved' ? 'approve' : status === 'denied' ? 'deny' : null,
          reason: row?.reason ?? input.reason ?? null,
          by: row?.resolvedBy ?? input.resolvedBy,
          keyKind: row?.keyKind ?? input.keyKind ?? null,
          decidedBy: row ? row.decidedBy : input.decidedBy ?? null,
        });
      });
      const { status, resolvedBy: by, keyKind } = input;
      logger.info({ runId, toolCallId, tool: name, status, by, keyKind }, 'tool call approval resolved');
    },
  };
}
