import { condition, setHandler } from '@temporalio/workflow';
import { formatDuration } from '../core/duration';
import type { InputWait } from '../core/tool-call';
import { toolResultText } from '../core/tool-texts';
import { inputAnsweredSignal } from './definitions';
import type { WaitingAttribute } from './waiting-attribute';
import { recording } from './recording';


/** What the wait answers: call again with the answers, or tell the LLM why not. */
export type InputVerdict = { answered: true } | { answered: false; content: string };

/** Input ids are ours (`inp_` and 32 hex digits); anything longer is not one and is not kept. */
const MAX_INPUT_ID_LENGTH = 64;

/**
 * Tool calls whose 2026-era server asked questions, stored in PostgreSQL by the activity that got
 * them (activities/tools/durable-questions.ts). The wait is a workflow condition with a timer: no
 * activity runs and no worker slot is held, and a worker that dies meanwhile loses nothing. The
 * API writes each answer to PostgreSQL (one conditional update decides which answer wins) and
 * then signals the input's id; the content never passes through here.
 */
export function installInputWait(listing: WaitingAttribute) {
  /** inputs answered in this execution; a signal may come before its round is waited for */
  const answered = new Set<string>();
  let waitingRounds = 0;

  setHandler(inputAnsweredSignal, ({ inputId }) => {
    if (typeof inputId === 'string' && inputId.length <= MAX_INPUT_ID_LENGTH) answered.add(inputId);
  });

  async function awaitAnswers(name: string, wait: InputWait): Promise<InputVerdict> {
    listing.set('input', ++waitingRounds > 0);
    try {
      const all = () => wait.inputIds.every((id) => answered.has(id));
      const inTime = await condition(all, wait.timeoutMs, { summary: `waiting for answers to ${name}'s questions (round ${wait.round})` });
      // At the timer, the round is closed; answers written before it win (their signal may have been lost).
      if (inTime || (await recording.closeInputRound({ roundId: wait.roundId })).answered) return { answered: true };
      return { answered: false, content: toolResultText.mcpQuestionNotAnswered(formatDuration(wait.timeoutMs)) };
    } finally {
      for (const id of wait.inputIds) answered.delete(id);
      listing.set('input', --waitingRounds > 0);
    }
  }

  return { awaitAnswers };
}

export type InputWaits = ReturnType<typeof installInputWait>;
