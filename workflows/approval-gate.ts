import {
  ApplicationFailure, CancellationScope, condition, isCancellation, setHandler,
} from '@temporalio/workflow';
import {
  APPROVAL_FAILURE, APPROVAL_STATUS_WORDS, approvalText,
  type ApprovalKeyKind, type ApprovalRequirement, type ApprovalStatus, type DecideApprovalInput, type DecidedBy,
} from '../core/approval';
import type { ToolCallRef } from '../core/tool-call';
import { decideApprovalUpdate, type ApprovalDecisionResult } from './definitions';
import type { WaitingAttribute } from './waiting-attribute';
import { recording } from './recording';


/** The event numbers of a call's approval_requested and approval_resolved, allocated by the run workflow. */
export interface ApprovalSeqs {
  requested: number;
  resolved: number;
}

/** What the gate answers: run the tool, or tell the LLM why not. */
export type GateOutcome = { approved: true } | { approved: false; content: string };

interface Waiting {
  /** approval_requested is recorded: a reviewer can see the call, and the run is listed as waiting */
  requested: boolean;
  decision?: { status: ApprovalStatus; reason?: string; keyKind?: ApprovalKeyKind; decidedBy?: DecidedBy };
  /** the resolution is in PostgreSQL: the update may answer, and its caller reads the run without this call pending */
  recorded: boolean;
}

const alreadyDecided = (toolCallId: string, status: ApprovalStatus) => ApplicationFailure.create({
  type: APPROVAL_FAILURE.alreadyDecided, nonRetryable: true, details: [status],
  message: `Tool call ${toolCallId} was already ${APPROVAL_STATUS_WORDS[status]}`,
});

/**
 * Tool calls that wait for a person's decision. The wait is a workflow condition with a timer: no
 * activity runs and no worker slot is held, and a worker that dies meanwhile loses nothing. The
 * decision arrives as an update (the API has checked in PostgreSQL that the call waits) whose
 * validator refuses a call already decided; the handler checks again, so of two concurrent
 * decisions exactly one wins.
 */
export function installApprovalGate(listing: WaitingAttribute): ApprovalGate {
  const gate = new ApprovalGate(listing);
  setHandler(decideApprovalUpdate, (update) => gate.decide(update), {
    // Refuses a call already decided; of two concurrent decisions the handler's check lets one win.
    validator: ({ toolCallId }) => gate.refuseIfDecided(toolCallId),
  });
  return gate;
}

export class ApprovalGate {
  private readonly waiting = new Map<string, Waiting>();
  /** calls decided in this execution (a run continues-as-new only between turns, when none waits) */
  private readonly settled = new Map<string, ApprovalStatus>();

  constructor(private readonly listing: WaitingAttribute) {}

  /** A person's decision on a waiting call: the first one wins, and it returns once recorded. */
  async decide({ toolCallId, decision, reason, keyKind, decidedBy }: DecideApprovalInput): Promise<ApprovalDecisionResult> {
    // A decision can arrive before this execution has reached the call again: after a worker crash,
    // the replaying worker may take the update before the events that re-create the wait. The API
    // has checked PostgreSQL (the call was recorded as waiting), so the handler waits for the call.
    await condition(() => this.waiting.has(toolCallId) || this.settled.has(toolCallId));
    const entry = this.waiting.get(toolCallId);
    if (!entry) throw alreadyDecided(toolCallId, this.settled.get(toolCallId) ?? 'cancelled');
    if (entry.decision) throw alreadyDecided(toolCallId, entry.decision.status);
    const status = decision === 'approve' ? 'approved' : 'denied';
    entry.decision = { status, ...(reason ? { reason } : {}), keyKind, ...(decidedBy ? { decidedBy } : {}) };
    await condition(() => entry.recorded);
    return { toolCallId, status };
  }

  /** The update's validator: a call already decided is refused before the update is accepted. */
  refuseIfDecided(toolCallId: string): void {
    const earlier = this.waiting.get(toolCallId)?.decision?.status ?? this.settled.get(toolCallId);
    if (earlier) throw alreadyDecided(toolCallId, earlier);
  }

  /** Records the request, waits for a decision or the timeout, and records how it ended. */
  async awaitDecision(
    ref: ToolCallRef, integrationId: string, requirement: ApprovalRequirement, seqs: ApprovalSeqs,
  ): Promise<GateOutcome> {
    const entry: Waiting = { requested: false, recorded: false };
    const call = { ...ref, integrationId, requestedSeq: seqs.requested, resolvedSeq: seqs.resolved };
    this.waiting.set(ref.toolCallId, entry);
    try {
      await recording.requestApproval({ ...call, timeoutMs: requirement.timeoutMs });
      entry.requested = true;
      this.syncWaitingAttribute();
      const summary = `waiting for approval of ${ref.name} (${ref.toolCallId})`;
      await condition(() => entry.decision !== undefined, requirement.timeoutMs, { summary });
      // A decision that arrived with the timer wins over it.
      entry.decision ??= { status: 'timed_out' };
      const { status, reason, keyKind, decidedBy } = entry.decision;
      await recording.recordApprovalOutcome({
        ...call, status, ...(reason ? { reason } : {}), ...(keyKind ? { keyKind } : {}), ...(decidedBy ? { decidedBy } : {}),
        resolvedBy: status === 'timed_out' ? 'timeout' : 'api',
      });
      if (status === 'approved') return { approved: true };
      const content = status === 'timed_out' ? approvalText.timedOut(requirement.timeout) : approvalText.denied(reason);
      return { approved: false, content };
    } catch (err) {
      if (isCancellation(err) && entry.decision === undefined) {
        entry.decision = { status: 'cancelled' };
        // Said on the run's events before run_ended (its number was allocated with the request), so
        // a reviewer's view closes the call; finishRun would mark the row all the same.
        if (entry.requested) await recordCancelled(call);
      }
      throw err;
    } finally {
      entry.recorded = true;
      this.settled.set(ref.toolCallId, entry.decision?.status ?? 'cancelled');
      this.waiting.delete(ref.toolCallId);
      this.syncWaitingAttribute();
    }
  }

  /**
   * The run is listed as waiting for approval while any recorded call waits. Several calls of one
   * turn are all in `waiting` before the first is recorded, so it follows what is recorded, not
   * the map's size.
   */
  private syncWaitingAttribute(): void {
    this.listing.set('approval', [...this.waiting.values()].some((w) => w.requested));
  }
}

/** A call's approval as its records name it. */
type ApprovalCall = ToolCallRef & { integrationId: string; requestedSeq: number; resolvedSeq: number };

/** The wait the run's cancellation ended, recorded whatever cancels the run meanwhile. */
const recordCancelled = (call: ApprovalCall) => CancellationScope.nonCancellable(
  () => recording.recordApprovalOutcome({ ...call, status: 'cancelled', resolvedBy: 'cancel' }),
);
