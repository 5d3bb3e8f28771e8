import { z } from 'zod';
import { MAX_RUN_INPUT_CHARS } from '../../use-cases/runs/start-run';
import { id, queryInteger } from '../schemas';

import { runStatus } from '../../core/run-view';
import { runLimitsSchema } from '../../core/run-limits';

/** The runs endpoints' requests and small answers; the run object itself is core/run-view.ts's. */

const input = z.string().min(1).max(MAX_RUN_INPUT_CHARS);
const runLimits = runLimitsSchema.optional().describe('this run\'s budget: each limit is the smaller of this and the agent\'s '
  + '(a run can tighten its agent\'s budget, never widen it)');

export const startRunBody = z.strictObject({
  input,
  agentId: id.optional().describe('runs this turn of the thread with another agent (id or name), which sees the thread\'s messages; '
    + 'the run and its messages record that agent, the thread keeps its own, and a run without agentId is the thread\'s own agent\'s'),
  limits: runLimits,
});

export const startOneShotRunBody = z.strictObject({ agentId: id.describe('an agent id or name'), input, limits: runLimits });

export const startRunHeaders = z.looseObject({
  'idempotency-key': z.string().min(1).max(255).optional()
    .describe('the same key with the same body gives the same run; with another body, 409'),
});

export const threadRunParams = z.strictObject({ threadId: id });

export const MAX_WAIT_MS = 30_000;

export const readRunQuery = z.object({
  waitMs: queryInteger(0, MAX_WAIT_MS).default(0).describe('long-poll: answer as soon as the run has ended, or after this many ms'),
});

/** The longest reviewer note a decision may carry; the LLM reads it. */
export const MAX_APPROVAL_REASON_CHARS = 4000;

export const approvalParams = z.strictObject({ id, toolCallId: z.string().min(1).max(512) });

export const decideApprovalBody = z.strictObject({
  decision: z.enum(['approve', 'deny']),
  reason: z.string().min(1).max(MAX_APPROVAL_REASON_CHARS).optional()
    .describe('a note for the LLM; with deny it reads "Tool call denied by a reviewer: {reason}"'),
});

export const cancelledRunSchema = z.object({ id: z.string(), status: runStatus });
