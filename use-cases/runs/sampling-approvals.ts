import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  APPROVAL_STATUS_WORDS, type ApprovalDecision, type ApprovalKeyKind, type ApprovalStatus, type DecidedBy,
} from '../../core/approval';
import { INPUT_ANSWERED_SIGNAL } from '../../core/run';
import type { SamplingStatus } from '../../core/sampling';
import type { Db } from '../../store/pool';
import { decideSampling, findSampling } from '../../store/runs/samplings';
import { EngineError } from '../../core/engine-error';

/**
 * A reviewer's decision on an MCP server's sampling request (integration sampling `approve`), by
 * its `samp_…` id through the approvals endpoint: check → record (one conditional update: of two
 * decisions exactly one wins) → tell. A 2025-era server's request waits in its call's activity,
 * which learns of the decision through PostgreSQL; a 2026-era one waits in the workflow with its
 * round, which is signalled the id and only that. The decision does not wait for a worker.
 */

const AS_APPROVAL: Record<SamplingStatus, ApprovalStatus> = {
  pending: 'cancelled', approved: 'approved', answered: 'approved', failed: 'approved', denied: 'denied', timed_out: 'timed_out',
  cancelled: 'cancelled',
};

export async function decideSamplingApproval(
  deps: { db: Db; client: Client; onSignalFailed?: (err: unknown) => void },
  req: { runId: string; toolCallId: string; decision: ApprovalDecision; reason?: string; keyKind: ApprovalKeyKind; decidedBy?: DecidedBy },
): Promise<boolean> {
  const { db } = deps;
  const before = await findSampling(db, req.runId, req.toolCallId);
  // Not one: an LLM may name its own tool calls samp_…, and they are decided as tool calls.
  if (!before?.needsApproval) return false;
  const decided = await decideSampling(db, req.runId, req.toolCallId, {
    approve: req.decision === 'approve', keyKind: req.keyKind, ...(req.reason ? { reason: req.reason } : {}),
    decidedBy: req.decidedBy ?? null,
  });
  if (!decided) {
    const now = (await findSampling(db, req.runId, req.toolCallId)) ?? before;
    const status = AS_APPROVAL[now.status];
    const why = now.reason ? `: ${now.reason}` : '';
    const decision = status === 'approved' ? 'approve' : status === 'denied' ? 'deny' : null;
    throw new EngineError('already_decided', `Sampling request ${req.toolCallId} was already ${APPROVAL_STATUS_WORDS[status]}${why}`,
      { approvalStatus: status, decision });
  }
  if (!decided.roundId) return true;
  try {
    await deps.client.workflow.getHandle(req.runId).signal(INPUT_ANSWERED_SIGNAL, { inputId: req.toolCallId });
  } catch (err) {
    // A run that ended meanwhile no longer waits; anything else, the round's timer finds in PostgreSQL.
    if (!(err instanceof WorkflowNotFoundError)) deps.onSignalFailed?.(err);
  }
  return true;
}
