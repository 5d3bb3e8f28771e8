import { z } from 'zod';
import { TOOL_TYPES } from '../../workflows/tool-kinds';
import { MAX_RUN_INPUT_CHARS } from '../../use-cases/runs/start-run';
import { id, queryInteger, timestamp } from '../schemas';

/** The runs endpoints' shapes: starting, reading, deciding approvals, answering inputs. */

export const runStatus = z.enum(['running', 'completed', 'failed', 'cancelled']);

export const runAcceptedSchema = z.object({ id, threadId: id, status: runStatus }).meta({ id: 'RunAccepted' });

export const pendingInputSchema = z.object({
  inputId: id, toolCallId: z.string(),
  mode: z.enum(['form', 'url']).describe('form: answer with content matching requestedSchema; url: the user completes it at url'),
  message: z.string(),
  requestedSchema: z.record(z.string(), z.unknown()).optional().describe('form mode: a flat object schema of primitive fields'),
  url: z.string().optional().describe('url mode: where the user completes the interaction'),
  requestedAt: timestamp,
  expiresAt: timestamp.describe('after this the tool call declines the question'),
}).meta({ id: 'PendingInput' });

// Documented, not enforced: a run recorded by an older engine may carry a tool type or stop reason this one no longer lists.
const toolType = z.string().meta({ enum: [...TOOL_TYPES] });
const stopReason = z.string().nullable().meta({ enum: ['answer', 'max_turns', 'cancelled', 'error', null] });

export const runSchema = z.object({
  id, threadId: id, agentId: id, status: runStatus, stopReason,
  output: z.string().nullable(),
  error: z.object({ type: z.string(), message: z.string() }).nullable(),
  turns: z.int(),
  usage: z.object({ inputTokens: z.int(), outputTokens: z.int() }),
  toolCalls: z.array(z.object({
    id: z.string(), turn: z.int(),
    name: z.string().describe('as the LLM saw it'),
    type: toolType,
    integrationId: z.string().optional(), status: z.enum(['ok', 'error']),
    durationMs: z.int(), result: z.string().describe('a preview of at most 2 KB'),
    resultBytes: z.int(),
    arguments: z.string().optional().describe('the arguments as JSON text, cut at 2000 characters'),
    argumentsBytes: z.int().optional(),
  })),
  pendingApprovals: z.array(z.object({
    toolCallId: z.string(), turn: z.int(), name: z.string().describe('as the LLM saw it'),
    integrationId: z.string().nullable(),
    arguments: z.unknown().describe('the arguments the LLM gave, read from the transcript'),
    requestedAt: timestamp, expiresAt: timestamp.describe('when the call is answered "not approved" unless decided'),
  })).describe('tool calls waiting for a decision (POST /v1/runs/{id}/approvals/{toolCallId}); empty once the run has ended'),
  pendingInputs: z.array(pendingInputSchema)
    .describe('questions MCP servers (integrations with elicitation) asked during tool calls, waiting for POST /v1/runs/{id}/inputs/{inputId}'),
  createdAt: timestamp, endedAt: timestamp.nullable(),
}).meta({ id: 'Run' });

const input = z.string().min(1).max(MAX_RUN_INPUT_CHARS);

export const startRunBody = z.strictObject({
  input,
  agentId: id.optional().describe('runs this turn of the thread with another agent (id or name), which sees the thread\'s messages; the run and '
    + 'its messages record that agent, the thread keeps its own, and a run without agentId is the thread\'s own agent\'s'),
});

export const startOneShotRunBody = z.strictObject({ agentId: id.describe('an agent id or name'), input });

export const startRunHeaders = z.looseObject({
  'idempotency-key': z.string().min(1).max(255).optional().describe('the same key with the same body gives the same run; with another body, 409'),
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
