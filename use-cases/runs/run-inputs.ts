import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { INPUT_ANSWERED_SIGNAL } from '../../core/run';
import { answerRunInput, findRunInput, type InputAction, type RunInput } from '../../store/runs/inputs';
import type { Queryable } from '../../store/pool';
import { elicitationContentProblem } from './elicitation-content';
import { EngineError } from '../../core/engine-error';
import { requireRunIn } from './runs';
import { requireRole, type Caller } from '../caller';
import type { DecidedBy } from '../../core/approval';
import { decidedByOf } from './approvals';

/**
 * Answering a question an MCP server asked during a run's tool call: check → record (one
 * conditional update: of two answers, exactly one wins) → tell. A 2025-era server's question waits
 * in its call's activity, which learns of the answer through PostgreSQL (the row's trigger); a
 * 2026-era server's question waits in the workflow, which is signalled the input's id, and only
 * that: the content stays in PostgreSQL, sealed. The answer does not wait for a worker.
 */

export interface InputAnswer {
  action: InputAction;
  content?: Record<string, unknown>;
}

/** An input once answered: its status is the answer's action, and it has a time. */
export type AnsweredInput = RunInput & { status: InputAction; answeredAt: string };

const contentRefused = (message: string) => new EngineError('validation', message, { field: 'content' });

/** Names the first field the content gets wrong; the field name is in `field` too, for programs. */
function checkContent(input: RunInput, answer: InputAnswer): Record<string, unknown> | undefined {
  if (answer.action !== 'accept') {
    if (answer.content !== undefined) throw contentRefused('body.content is sent only with action "accept"');
    return undefined;
  }
  if (input.mode === 'url') {
    if (answer.content !== undefined) {
      throw contentRefused('body.content is not sent for a url-mode input: the user completes it at its url');
    }
    return undefined;
  }
  const content = answer.content ?? {};
  const problem = elicitationContentProblem(input.requestedSchema ?? { type: 'object', properties: {} }, content);
  if (problem) {
    const field = /^content(?:\.(\S+))?/.exec(problem)?.[1] ?? /property '([^']+)'/.exec(problem)?.[1];
    throw new EngineError('validation', `Invalid content: ${problem}`, field ? { field: `content.${field}` } : {});
  }
  return content;
}

export interface AnswerDeps {
  db: Queryable;
  client: Client;
  /** a signal that did not reach the run: the answer stands, and the run's wait finds it at its timer */
  onSignalFailed: (err: unknown) => void;
}

/**
 * Answers a question of a run of the caller's tenant, recording the caller as who answered;
 * another tenant's run answers as an unknown one and is left as it is.
 */
export async function answerInputFor(
  deps: AnswerDeps, caller: Caller, runId: string, inputId: string, answer: InputAnswer,
): Promise<AnsweredInput> {
  requireRole(caller, 'decide');
  return recordAnswer(deps, { tenantId: caller.tenantId, decidedBy: decidedByOf(caller) }, { runId, inputId }, answer);
}

interface AnsweredBy { tenantId: string | undefined; decidedBy: DecidedBy | null }

async function recordAnswer(
  deps: AnswerDeps, by: AnsweredBy, { runId, inputId }: { runId: string; inputId: string }, answer: InputAnswer,
): Promise<AnsweredInput> {
  const { db } = deps;
  await requireRunIn(db, by.tenantId, runId);
  const input = await findRunInput(db, runId, inputId);
  if (!input) throw new EngineError('not_found', `Input ${inputId} of run ${runId} does not exist`);
  const content = checkContent(input, answer);
  const answered = await answerRunInput(db, runId, inputId, answer.action, content, by.decidedBy);
  if (!answered) {
    const now = (await findRunInput(db, runId, inputId))?.status ?? input.status;
    const why = now === 'pending' ? 'its tool call has ended' : now === 'expired' ? 'it expired' : `it was already answered (${now})`;
    throw new EngineError('input_closed', `Input ${inputId} no longer waits for an answer: ${why}`);
  }
  if (answered.roundId) {
    try {
      await deps.client.workflow.getHandle(runId).signal(INPUT_ANSWERED_SIGNAL, { inputId });
    } catch (err) {
      // A run that ended meanwhile no longer waits; anything else, the timer's check covers.
      if (!(err instanceof WorkflowNotFoundError)) deps.onSignalFailed(err);
    }
  }
  // The update that recorded it set both.
  return answered as AnsweredInput;
}
