import { z } from 'zod';
import { MAX_RUN_INPUT_CHARS } from '../../use-cases/runs/start-run';
import { id, queryInteger } from '../schemas';

import { runStatus } from '../../core/run-view';
import { runLimitsSchema } from '../../core/run-limits';
import { callerToolsSchema, callerToolTimeoutSchema } from '../../core/caller-tool-schema';
import { MAX_REPLACED_TOOL_RESULTS } from '../../core/fork';
import { SIZE_BOUNDS } from '../../core/integration';
import { agentModelSchema } from '../../use-cases/agents/agent-requests';

/** The runs endpoints' requests and small answers; the run object itself is core/run-view.ts's. */

const input = z.string().min(1).max(MAX_RUN_INPUT_CHARS);
const runLimits = runLimitsSchema.optional().describe('this run\'s budget: each limit is the smaller of this and the agent\'s '
  + '(a run can tighten its agent\'s budget, never widen it)');

const callerTools = {
  callerTools: callerToolsSchema.optional()
    .describe('tools this run\'s caller runs itself (replacing its agent\'s callerTools; [] for none): the LLM calls each by its name, '
      + 'the run waits for the answer (POST /v1/runs/{id}/tool-results/{toolCallId}), listed in pendingCallerTools'),
  callerToolTimeout: callerToolTimeoutSchema.optional(),
};

export const startRunBody = z.strictObject({
  input,
  agentId: id.optional().describe('runs this turn of the thread with another agent (id or name), which sees the thread\'s messages; '
    + 'the run and its messages record that agent, the thread keeps its own, and a run without agentId is the thread\'s own agent\'s'),
  limits: runLimits,
  ...callerTools,
});

export const startOneShotRunBody = z.strictObject({
  agentId: id.describe('an agent id or name'), input, limits: runLimits, ...callerTools,
});

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

export const forkRunBody = z.strictObject({
  atTurn: z.int().min(-2_147_483_648).max(2_147_483_647)
    .describe('the turn of the run to fork at: the fork has the conversation up to the start of that turn, and runs it anew; '
      + 'from 1 to the run\'s last ended turn + 1 (409 otherwise)'),
  input: input.optional().describe('with atTurn 1 only: the fork\'s input, in place of the original\'s'),
  agentId: id.optional().describe('the agent the fork runs on (id or name); by default the original\'s agent, as it is now'),
  model: agentModelSchema.optional().describe('the model the fork runs on, in place of its agent\'s; '
    + 'baseUrl and apiKeyEnv need the admin key, as on POST /v1/agents'),
  toolResults: z.array(z.strictObject({
    toolCallId: z.string().min(1).max(512).describe('a tool call of a turn before atTurn'),
    content: z.string().max(SIZE_BOUNDS.maxResultBytes.max).describe('what the LLM reads as the call\'s result, '
      + 'within its integration\'s maxResultBytes'),
    isError: z.boolean().optional()
      .describe('the LLM reads the content as the tool\'s failure, e.g. "MCP tool execution failed: {content}"'),
  })).max(MAX_REPLACED_TOOL_RESULTS).optional().describe('earlier tool results the fork\'s conversation has in place of the original\'s'),
});
