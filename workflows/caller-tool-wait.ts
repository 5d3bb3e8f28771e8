import { condition, setHandler } from '@temporalio/workflow';
import type { ToolActivityInput } from '../activities/tool-handler';
import type { CallerToolWait, ToolOutcome } from '../core/tool-call';
import { callerToolAnsweredSignal } from './definitions';
import { recording } from './recording';
import type { WaitingAttribute } from './waiting-attribute';

/** Tool call ids come from the LLM: one longer than this is not one the API answered (its route bounds it). */
const MAX_TOOL_CALL_ID_LENGTH = 512;

/**
 * Calls of the tools a run's caller runs (core/caller-tools.ts), stored by their activity
 * (activities/tools/caller-tool.ts). The wait is a workflow condition with a timer (the run's
 * callerToolTimeout): no activity runs and no worker slot is held, and a restart of every process
 * loses nothing. The API writes the answer to PostgreSQL (one conditional update decides which
 * answer wins), then signals the call's id, and only that: the content never passes through here.
 * Several calls of a turn wait together, answered in any order; the run is listed as waiting for
 * `caller_tool` while any does.
 */
export function installCallerToolWait(listing: WaitingAttribute) {
  /** calls answered in this execution; a signal may come before its call is waited for */
  const answered = new Set<string>();
  let waiting = 0;

  setHandler(callerToolAnsweredSignal, (said) => {
    const toolCallId = said?.toolCallId;
    if (typeof toolCallId === 'string' && toolCallId.length <= MAX_TOOL_CALL_ID_LENGTH) answered.add(toolCallId);
  });

  /**
   * Waits for the call's answer, or its timeout, then records its result: the answer, or what the
   * model reads of a call not answered (an answer recorded with the timer wins over it).
   */
  async function awaitAnswer(input: ToolActivityInput, wait: CallerToolWait): Promise<ToolOutcome> {
    waiting++;
    listing.set('caller_tool', true);
    try {
      const summary = `waiting for the caller to run ${input.name} (${input.toolCallId})`;
      const id = input.toolCallId;
      if (wait.timeoutMs > 0) await condition(() => answered.has(id), wait.timeoutMs, { summary });
      return await recording.recordCallerToolResult(input);
    } finally {
      answered.delete(input.toolCallId);
      waiting--;
      listing.set('caller_tool', waiting > 0);
    }
  }

  return { awaitAnswer };
}

export type CallerToolWaits = ReturnType<typeof installCallerToolWait>;
