import type { Context } from '@temporalio/activity';
import { TOOL_CALL_WAITING_SIGNAL, type ToolCallWaiting } from '../core/run';
import type { Logger } from '../platform/logger';

/**
 * A tool call that waits inside its activity for a person's answer (a 2025-era server's question,
 * a reviewer's decision on its sampling request) tells its run so by a signal, and again when it
 * no longer waits: the run's `waitingFor` search attribute then lists it as waiting for `input`
 * (`GET /v1/runs?waiting=true`), as it lists the waits the workflow holds itself. The signal
 * carries the call's id only. The workflow unlists the call when its activity ends, however it
 * ends, so a signal lost here costs a listing, never a stuck one; it is logged and the wait goes on.
 */

/** Starts one wait for a person; the function it returns ends it (once, however often it is called). */
export type PersonWaits = () => () => void;

export function personWaits(ctx: Context, toolCallId: string, log: Logger): PersonWaits {
  let waits = 0;
  // One signal after the other, so that the run hears them in the order they were sent.
  let told: Promise<void> = Promise.resolve();
  const execution = ctx.info.workflowExecution;
  const tell = (waiting: boolean) => {
    if (!execution) return; // an activity started on its own has no run to tell
    const said: ToolCallWaiting = { toolCallId, waiting };
    told = told
      .then(() => ctx.client.workflow.getHandle(execution.workflowId, execution.runId).signal(TOOL_CALL_WAITING_SIGNAL, said))
      .catch((err: unknown) => {
        log.warn({ err: (err as Error)?.message, waiting }, 'the run could not be told that the call waits for a person');
      });
  };
  return () => {
    if (waits++ === 0) tell(true);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--waits === 0) tell(false);
    };
  };
}
