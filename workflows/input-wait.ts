import { condition, setHandler } from '@temporalio/workflow';
import { formatDuration } from '../core/duration';
import type { InputWait } from '../core/tool-call';
import { toolResultText } from '../core/tool-texts';
import { inputAnsweredSignal, toolCallWaitingSignal } from './definitions';
import type { WaitingAttribute } from './waiting-attribute';
import { recording } from './recording';


/** What the wait answers: call again with the answers, or tell the LLM why not. */
export type InputAnswers = { answered: true } | { answered: false; content: string };

/** Input ids are ours (`inp_` and 32 hex digits); anything longer is not one and is not kept. */
const MAX_INPUT_ID_LENGTH = 64;
/** Tool call ids come from the LLM: one longer than this is not tracked (its call is then not listed). */
const MAX_TOOL_CALL_ID_LENGTH = 256;

/**
 * Tool calls whose 2026-era server asked questions, stored in PostgreSQL by the activity that got
 * them (activities/tools/durable-questions.ts). The wait is a workflow condition with a timer: no
 * activity runs and no worker slot is held, and a worker that dies meanwhile loses nothing. The
 * API writes each answer to PostgreSQL (one conditional update decides which answer wins) and
 * then signals the input's id; the content never passes through here.
 *
 * A 2025-era server asks within its request, so its call waits for the person inside its activity:
 * the activity signals while it does (activities/person-waits.ts). Either kind lists the run as
 * waiting for `input`. Only a call whose activity is running may be listed, and its activity's end
 * unlists it, so a signal that comes late or an activity that died never leaves the run listed.
 */
export function installInputWait(listing: WaitingAttribute) {
  /** inputs answered in this execution; a signal may come before its round is waited for */
  const answered = new Set<string>();
  let waitingRounds = 0;
  /** tool calls whose activity is running, and those of them waiting inside for a person */
  const running = new Set<string>();
  const asking = new Set<string>();
  const sync = () => listing.set('input', waitingRounds > 0 || asking.size > 0);

  setHandler(inputAnsweredSignal, ({ inputId }) => {
    if (typeof inputId === 'string' && inputId.length <= MAX_INPUT_ID_LENGTH) answered.add(inputId);
  });
  setHandler(toolCallWaitingSignal, (said) => {
    const toolCallId = said?.toolCallId;
    if (typeof toolCallId !== 'string' || !running.has(toolCallId)) return;
    if (said.waiting === true) asking.add(toolCallId);
    else asking.delete(toolCallId);
    sync();
  });

  async function awaitAnswers(name: string, wait: InputWait): Promise<InputAnswers> {
    waitingRounds++;
    sync();
    try {
      const all = () => wait.inputIds.every((id) => answered.has(id));
      const inTime = await condition(all, wait.timeoutMs, { summary: `waiting for answers to ${name}'s questions (round ${wait.round})` });
      // At the timer, the round is closed; answers written before it win (their signal may have been lost).
      if (inTime || (await recording.closeInputRound({ roundId: wait.roundId })).answered) return { answered: true };
      return { answered: false, content: toolResultText.mcpQuestionNotAnswered(formatDuration(wait.timeoutMs)) };
    } finally {
      for (const id of wait.inputIds) answered.delete(id);
      waitingRounds--;
      sync();
    }
  }

  /** A tool call's activity is scheduled: it may say it waits for a person. */
  function activityStarted(toolCallId: string): void {
    if (toolCallId.length <= MAX_TOOL_CALL_ID_LENGTH) running.add(toolCallId);
  }

  /** Its activity has ended, however: it waits for nobody now. */
  function activityEnded(toolCallId: string): void {
    running.delete(toolCallId);
    if (asking.delete(toolCallId)) sync();
  }

  return { awaitAnswers, activityStarted, activityEnded };
}

export type InputWaits = ReturnType<typeof installInputWait>;
