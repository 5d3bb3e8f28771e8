import { SdkErrorCode, SdkError } from '@modelcontextprotocol/client';
import type { ElicitResult } from '@modelcontextprotocol/client';
import { ElicitRequestSchema } from '@modelcontextprotocol/core';
import { closeRunInput, insertRunInput, takeRunInputAnswer, type RunInput } from '../../store/runs/inputs';
import type { ElicitHandler } from '../../mcp-client/connections/connect';
import type { ToolRun } from '../tool-handler';
import { waitForRow } from './row-wait';

/**
 * MCP elicitation during a tool call: the server's question becomes a pending input of the run
 * (PostgreSQL), answered through the API; the call waits for the answer here, in its activity.
 * While it waits, the request's own bounds stand still, up to the integration's elicitation timeout.
 */

/** A question larger than this is declined unseen: it would be stored and shown to every reader of the run. */
const MAX_QUESTION_BYTES = 64 * 1024;

export interface CallClock {
  /** a progress notification: the per-request timer starts again */
  progress(): void;
  /** time left for waiting on answers in this call */
  budgetMs(): number;
  /** while a question waits, neither timer runs */
  pause(): void;
  resume(): void;
  stop(): void;
}

/**
 * The bounds of one MCP request whose waits for answers do not count: `requestMs` without
 * progress, `totalMs` in all, both standing still while paused, for at most `budgetMs` in all.
 * On expiry, onTimeout gets the bound that ran out (the contract timeout text names it).
 */
export function callClock(requestMs: number, totalMs: number, budgetMs: number, onTimeout: (ms: number) => void): CallClock {
  let spent = 0;
  let pausedAt: number | undefined;
  let depth = 0;
  let totalLeft = totalMs;
  let totalStarted = Date.now();
  let idle: NodeJS.Timeout | undefined;
  let total: NodeJS.Timeout | undefined;
  /** once stopped (the call has ended), a question still winding down does not start the timers again */
  let stopped = false;
  const clear = () => {
    clearTimeout(idle);
    clearTimeout(total);
  };
  const start = () => {
    if (stopped) return;
    idle = setTimeout(() => onTimeout(requestMs), requestMs);
    totalStarted = Date.now();
    total = setTimeout(() => onTimeout(totalMs), Math.max(0, totalLeft));
  };
  start();
  return {
    progress() {
      if (stopped || pausedAt !== undefined) return;
      clearTimeout(idle);
      idle = setTimeout(() => onTimeout(requestMs), requestMs);
    },
    budgetMs: () => Math.max(0, budgetMs - spent - (pausedAt === undefined ? 0 : Date.now() - pausedAt)),
    pause() {
      if (depth++ > 0) return;
      pausedAt = Date.now();
      totalLeft -= pausedAt - totalStarted;
      clear();
    },
    resume() {
      if (--depth > 0 || pausedAt === undefined) return;
      spent += Date.now() - pausedAt;
      pausedAt = undefined;
      start();
    },
    stop() {
      stopped = true;
      clear();
    },
  };
}

/** Waits for the answer to a stored question until `deadline`; an abort withdraws the question. */
function awaitAnswer(run: ToolRun, input: RunInput, deadline: number, signal: AbortSignal): Promise<ElicitResult> {
  const { db } = run.deps;
  return waitForRow<ElicitResult>(run, deadline, signal, {
    read: async () => {
      const outcome = await takeRunInputAnswer(db, input.inputId);
      if (outcome.status === 'accept') {
        const content = 'content' in outcome && outcome.content ? { content: outcome.content as ElicitResult['content'] } : {};
        return { action: 'accept', ...content };
      }
      if (outcome.status === 'decline' || outcome.status === 'cancel') return { action: outcome.status };
      return outcome.status === 'expired' ? { action: 'decline' } : undefined;
    },
    close: async (why) => {
      if (!(await closeRunInput(db, input.inputId, why === 'withdrawn' ? 'cancel' : 'expired'))) return undefined;
      if (why === 'expired') run.log.info({ inputId: input.inputId }, 'no answer in time: the question is declined');
      return { action: why === 'withdrawn' ? 'cancel' : 'decline' };
    },
  });
}

/**
 * The handler for the server's questions during one call: each is stored as a pending input of
 * the run and waited for, the clock paused, within what is left of the budget. A question that
 * cannot be asked (no budget left, too large, malformed) is declined.
 */
export function elicitationHandler(run: ToolRun, clock: CallClock, callSignal: AbortSignal): ElicitHandler {
  return async (rawParams, requestSignal) => {
    const parsed = ElicitRequestSchema.shape.params.safeParse(rawParams);
    const waitMs = clock.budgetMs();
    if (!parsed.success || waitMs <= 0 || Buffer.byteLength(JSON.stringify(rawParams)) > MAX_QUESTION_BYTES) {
      run.log.warn({ waitMs, valid: parsed.success }, 'an MCP server question was declined unasked');
      return { action: 'decline' };
    }
    const params = parsed.data;
    const signal = AbortSignal.any([callSignal, requestSignal]);
    clock.pause();
    try {
      const input = await insertRunInput(run.deps.db, {
        runId: run.input.runId, toolCallId: run.input.toolCallId, message: params.message, waitMs,
        ...(params.mode === 'url'
          ? { mode: 'url', url: params.url }
          : { mode: 'form', requestedSchema: params.requestedSchema as Record<string, unknown> }),
      });
      run.log.info({ inputId: input.inputId, mode: input.mode, waitMs }, 'the MCP server asks for input');
      const result = await awaitAnswer(run, input, Date.now() + waitMs, signal);
      run.log.info({ inputId: input.inputId, action: result.action }, 'input relayed to the MCP server');
      return result;
    } finally {
      clock.resume();
    }
  };
}

export const requestTimedOut = (ms: number) => new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out', { timeout: ms });
