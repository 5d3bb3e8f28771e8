import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  APPROVAL_FAILURE, APPROVAL_STATUS_WORDS, DECIDE_APPROVAL_UPDATE, type ApprovalDecision, type ApprovalKeyKind, type ApprovalStatus,
  type DecideApprovalInput, type DecidedBy,
} from '../../core/approval';
import { findApproval, pendingApprovals, toolCallArguments, type ApprovalRecord, type PendingApproval } from '../../store/approvals';
import type { Db, Queryable } from '../../store/pool';
import type { RunEvent } from '../../store/runs/events';
import { EngineError } from '../../core/engine-error';
import { readRun, requireRunIn, runNotFound } from './runs';
import { requireRole, type Caller } from '../caller';
import { type RunView } from '../../core/run-view';
import { decideSamplingApproval } from './sampling-approvals';
import { missedDeadline, sendDecision } from './decision-update';


export interface ApprovalDeps {
  db: Db;
  client: Client;
}

export interface DecideApprovalRequest {
  runId: string;
  toolCallId: string;
  decision: ApprovalDecision;
  reason?: string;
  keyKind: ApprovalKeyKind;
}

const DECISION_OF: Partial<Record<ApprovalStatus, ApprovalDecision>> = { approved: 'approve', denied: 'deny' };
const WORDS: Record<ApprovalStatus, string> = { ...APPROVAL_STATUS_WORDS, timed_out: `${APPROVAL_STATUS_WORDS.timed_out} (it timed out)` };

function alreadyDecided(toolCallId: string, status: ApprovalStatus, reason?: string | null): EngineError {
  const decision = DECISION_OF[status] ?? null;
  return new EngineError('already_decided', `Tool call ${toolCallId} was already ${WORDS[status]}${reason ? `: ${reason}` : ''}`,
    { approvalStatus: status, decision });
}

const notWaiting = (runId: string, toolCallId: string) =>
  new EngineError('not_found', `Run ${runId} has no tool call ${toolCallId} that waits for approval`);

/** Who a caller is, as a decision records it. */
export const decidedByOf = (caller: Caller): DecidedBy => ({ principalId: caller.principal.id, name: caller.principal.name });

/**
 * Decides a pending approval of a run of the caller's tenant (a tool call's or a sampling
 * request's), recording the caller as who decided; another tenant's run answers as an unknown one
 * and is left as it is.
 */
export async function decideApprovalFor(deps: ApprovalDeps, caller: Caller, req: DecideApprovalRequest): Promise<RunView> {
  requireRole(caller, 'decide');
  return decide(deps, { tenantId: caller.tenantId, decidedBy: decidedByOf(caller) }, req);
}

/**
 * Decides a pending approval: checked against PostgreSQL first (an unknown call is a 404, a
 * decided one a 409 naming the decision), then sent to the run's workflow as an update whose
 * validator decides races: of two concurrent decisions exactly one wins, the other is a 409.
 * Answers with the run as it is once the decision is recorded.
 */
async function decide(
  deps: ApprovalDeps, by: { tenantId: string | undefined; decidedBy?: DecidedBy }, req: DecideApprovalRequest,
): Promise<RunView> {
  const { db } = deps;
  await requireRunIn(db, by.tenantId, req.runId);
  const { decidedBy } = by;
  if (req.toolCallId.startsWith('samp_') && await decideSamplingApproval(deps, { ...req, ...(decidedBy ? { decidedBy } : {}) })) {
    return (await readRun(db, req.runId)) ?? Promise.reject(runNotFound(req.runId));
  }
  const before = await findApproval(db, req.runId, req.toolCallId);
  if (!before) throw notWaiting(req.runId, req.toolCallId);
  if (before.status !== 'pending') throw alreadyDecided(req.toolCallId, before.status, before.reason);

  const input: DecideApprovalInput = {
    toolCallId: req.toolCallId, decision: req.decision, keyKind: req.keyKind, ...(req.reason ? { reason: req.reason } : {}),
    ...(decidedBy ? { decidedBy } : {}),
  };
  try {
    await sendDecision(deps.client, req.runId, DECIDE_APPROVAL_UPDATE, input);
  } catch (err) {
    throw await explainFailure(db, req, err);
  }
  const run = await readRun(db, req.runId);
  if (!run) throw runNotFound(req.runId);
  return run;
}

async function explainFailure(db: Db, req: DecideApprovalRequest, err: unknown): Promise<unknown> {
  const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
  if (cause instanceof ApplicationFailure && cause.type === APPROVAL_FAILURE.alreadyDecided) {
    const now = await findApproval(db, req.runId, req.toolCallId);
    const status = (cause.details?.[0] as ApprovalStatus | undefined) ?? settledStatus(now) ?? 'cancelled';
    return alreadyDecided(req.toolCallId, status, status === now?.status ? now.reason : null);
  }
  // The run ended between the check and the update (its approvals were cancelled with it).
  const now = await findApproval(db, req.runId, req.toolCallId);
  const settled = settledStatus(now);
  if (settled) return alreadyDecided(req.toolCallId, settled, now?.reason);
  if (err instanceof WorkflowNotFoundError) return alreadyDecided(req.toolCallId, 'cancelled');
  if (missedDeadline(err)) {
    return new EngineError('unavailable', 'No worker took the decision in time; the run waits on, try again shortly');
  }
  return err;
}

const settledStatus = (row: ApprovalRecord | undefined): ApprovalStatus | undefined =>
  row && row.status !== 'pending' ? row.status : undefined;


/** The arguments of the tool call an approval_requested event asks about, from the transcript: a reviewer judges the call by them. */
export function requestedArguments(db: Queryable, runId: string, event: RunEvent): Promise<unknown> {
  return toolCallArguments(db, runId, event.data);
}

/** The run's first tool call that waits for approval, other than `skip`. */
export async function firstPendingApproval(db: Queryable, runId: string, skip?: string): Promise<PendingApproval | undefined> {
  return (await pendingApprovals(db, runId)).find((a) => a.toolCallId !== skip);
}
