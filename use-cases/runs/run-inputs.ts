import { answerRunInput, findRunInput, type InputAction, type RunInput } from '../../store/runs/inputs';
import type { Queryable } from '../../store/pool';
import { findRun } from '../../store/runs/runs';
import { elicitationContentProblem } from './elicitation-content';
import { HttpProblem, runNotFound } from '../problem';

/**
 * Answering a question an MCP server asked during a run's tool call: check → record. The worker
 * whose call waits learns of it through PostgreSQL (the row's trigger), wherever it runs.
 */

export interface InputAnswer {
  action: InputAction;
  content?: Record<string, unknown>;
}

/** An input once answered: its status is the answer's action, and it has a time. */
export type AnsweredInput = RunInput & { status: InputAction; answeredAt: string };

/** Names the first field the content gets wrong; the field name is in `field` too, for programs. */
function checkContent(input: RunInput, answer: InputAnswer): Record<string, unknown> | undefined {
  if (answer.action !== 'accept') {
    if (answer.content !== undefined) throw new HttpProblem(400, 'body.content is sent only with action "accept"', 'validation', { field: 'content' });
    return undefined;
  }
  if (input.mode === 'url') {
    if (answer.content !== undefined) throw new HttpProblem(400, 'body.content is not sent for a url-mode input: the user completes it at its url', 'validation', { field: 'content' });
    return undefined;
  }
  const content = answer.content ?? {};
  const problem = elicitationContentProblem(input.requestedSchema ?? { type: 'object', properties: {} }, content);
  if (problem) {
    const field = /^content(?:\.(\S+))?/.exec(problem)?.[1] ?? /property '([^']+)'/.exec(problem)?.[1];
    throw new HttpProblem(400, `Invalid content: ${problem}`, 'validation', field ? { field: `content.${field}` } : {});
  }
  return content;
}

export async function answerInput(db: Queryable, runId: string, inputId: string, answer: InputAnswer): Promise<AnsweredInput> {
  if (!(await findRun(db, runId))) throw runNotFound(runId);
  const input = await findRunInput(db, runId, inputId);
  if (!input) throw new HttpProblem(404, `Input ${inputId} of run ${runId} does not exist`, 'not_found');
  const content = checkContent(input, answer);
  const answered = await answerRunInput(db, runId, inputId, answer.action, content);
  if (!answered) {
    const now = (await findRunInput(db, runId, inputId))?.status ?? input.status;
    const why = now === 'pending' ? 'its tool call has ended' : now === 'expired' ? 'it expired' : `it was already answered (${now})`;
    throw new HttpProblem(409, `Input ${inputId} no longer waits for an answer: ${why}`, 'input_closed');
  }
  // The update that recorded it set both.
  return answered as AnsweredInput;
}
