/**
 * Event numbers are allocated in the workflow, so that a retried activity writes the same rows, and
 * followers release events in seq order only. Pure: unit-tested directly.
 */

/** Takes `count` numbers from the run's counter; answers the first. */
export function allocateEvents(state: { eventSeq: number }, count: number): number {
  const seq = state.eventSeq;
  state.eventSeq += count;
  return seq;
}

/** The numbers of one turn's tool calls: 0 where a number does not apply. */
export interface TurnEventNumbers {
  /** approval_requested of each call that waits for a person */
  requested: number[];
  /** tool_call_started of each call (its tool_call_ended is the next number) */
  callSeqs: number[];
  /** approval_resolved of each call that waits */
  resolved: number[];
}

/**
 * How many numbers a call's own events take: tool_call_started and tool_call_ended; a sub-agent's
 * call has child_run_started and child_run_ended between them (its tool_call_ended is then the
 * fourth: core/tool-call.ts endedSeqOf), a caller tool's call caller_tool_call (the third).
 */
const callEventCount = (child: boolean, caller: boolean) => (child ? 4 : caller ? 3 : 2);

/**
 * Every approval_requested of the turn comes first (a reviewer sees them at once), then the events
 * of the calls that run at once, and last those of the calls that wait: a decision that takes hours
 * holds back nothing that has already happened.
 */
export function allocateTurnEvents(
  state: { eventSeq: number }, needsApproval: boolean[], subAgent: boolean[] = [], callerTool: boolean[] = [],
): TurnEventNumbers {
  const count = (index: number) => callEventCount(Boolean(subAgent[index]), Boolean(callerTool[index]));
  const requested = needsApproval.map((ask) => (ask ? allocateEvents(state, 1) : 0));
  const callSeqs = needsApproval.map((ask, index) => (ask ? 0 : allocateEvents(state, count(index))));
  const resolved = needsApproval.map((ask, index) => {
    if (!ask) return 0;
    const seq = allocateEvents(state, 1 + count(index));
    callSeqs[index] = seq + 1;
    return seq;
  });
  return { requested, callSeqs, resolved };
}
