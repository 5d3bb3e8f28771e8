import { z } from 'zod';
import { TOOL_TYPES } from './native-tool-kinds';
import { REPLAY_TOOLS } from './replay';
import type { RunStatus } from './run';

/**
 * The run object (GET /v1/runs/:id) as one schema: the API answers with it and documents it
 * (/docs), and its TypeScript type, RunView, is inferred from it for the code that builds it and
 * for the CLI that reads it.
 */
const id = z.string().min(1).max(128);
const timestamp = z.string().meta({ format: 'date-time' });

export const runStatus = z.enum(['running', 'completed', 'failed', 'cancelled'] satisfies RunStatus[]);

/** The run and the turn a fork was forked from (core/fork.ts ForkedFrom), on the run object and its thread. */
export const forkedFromSchema = z.object({ runId: id, turn: z.int() }).meta({ id: 'ForkedFrom' });
/** The run a replay replays, and where its calls' results come from (core/replay.ts ReplayOf). */
export const replayOfSchema = z.object({ runId: id, tools: z.enum(REPLAY_TOOLS) }).meta({ id: 'ReplayOf' });

export const runAcceptedSchema = z.object({ id, threadId: id, status: runStatus }).meta({ id: 'RunAccepted' });

/** Who decided an approval or answered a question (core/approval.ts DecidedBy). */
export const decidedBySchema = z.object({
  principalId: z.string().describe('the id of the principal: an API key\'s id (key_…), api_key for API_KEY, operator'),
  name: z.string().describe('a name a person recognises: the key\'s name, API_KEY, …'),
}).meta({ id: 'DecidedBy' });

const waitingRun = z.string().optional().describe('a sub-agent\'s run that waits (answer or decide it there); absent: this run');

export const pendingInputSchema = z.object({
  runId: waitingRun,
  inputId: id, toolCallId: z.string(),
  mode: z.enum(['form', 'url']).describe('form: answer with content matching requestedSchema; url: the user completes it at url'),
  message: z.string(),
  requestedSchema: z.record(z.string(), z.unknown()).optional().describe('form mode: a flat object schema of primitive fields'),
  url: z.string().optional().describe('url mode: where the user completes the interaction'),
  requestedAt: timestamp,
  expiresAt: timestamp.describe('after this the tool call declines the question'),
}).meta({ id: 'PendingInput' });

const raisable = z.object({
  maxCostUsd: z.number().optional(), maxToolCalls: z.int().optional(),
  maxInputTokens: z.int().optional(), maxOutputTokens: z.int().optional(),
});

export const pendingBudgetSchema = z.object({
  limitReached: z.string().meta({ enum: ['maxToolCalls', 'maxInputTokens', 'maxOutputTokens', 'maxCostUsd'] }),
  spent: z.object({ costUsd: z.number(), inputTokens: z.int(), outputTokens: z.int(), toolCalls: z.int() })
    .describe('what the run (its sub-agents included) had spent when it asked; costUsd counts priced turns only'),
  limits: raisable.describe('the limits a person may raise, as they stood when the run asked'),
  requestedAt: timestamp,
  expiresAt: timestamp.describe('when the run stops (stopReason "budget") unless a person answers (limits.askTimeout)'),
}).meta({ id: 'PendingBudget' });

export const pendingCallerToolSchema = z.object({
  toolCallId: z.string().describe('what to answer by: POST /v1/runs/{id}/tool-results/{toolCallId}'),
  name: z.string().describe('the caller tool the LLM called'),
  arguments: z.unknown().describe('the arguments the LLM gave, checked against the tool\'s inputSchema'),
  askedAt: timestamp,
  expiresAt: timestamp.describe('when the LLM is told the call was not answered (the run\'s callerToolTimeout)'),
}).meta({ id: 'PendingCallerTool' });

// Documented, not enforced: a run recorded by an older engine may carry a tool type or stop reason this one no longer lists.
const toolType = z.string().meta({ enum: [...TOOL_TYPES] });
const stopReason = z.string().nullable().meta({ enum: ['answer', 'max_turns', 'budget', 'cancelled', 'error', null] });
const usage = z.object({ inputTokens: z.int(), outputTokens: z.int() });
/** A sum of LLM turns' costs (a run's, a thread's). */
export const costSchema = z.object({
  usd: z.number().describe('USD, the priced turns\' sum'),
  priced: z.boolean().describe('false when a turn\'s model had no price: its cost is not in usd (never counted as zero)'),
});

export const runViewSchema = z.object({
  id, threadId: id, agentId: id,
  parentRunId: z.string().nullable().describe('a sub-agent\'s run: the run that started it; else null'),
  parentToolCallId: z.string().nullable().describe('a sub-agent\'s run: the tool call of its parent that started it'),
  forkedFrom: forkedFromSchema.nullable().describe('a fork (POST /v1/runs/{id}/fork): the run and the turn it was forked from; '
    + 'its own turns are numbered from that turn; else null'),
  replayOf: replayOfSchema.nullable().describe('a replay (POST /v1/runs/{id}/replay): the run it replays, and where its tool calls\' '
    + 'results come from; else null'),
  evalId: z.string().nullable().describe('a replay an eval started (POST /v1/evals): the eval; else null'),
  startedBy: z.object({ principalId: z.string(), name: z.string() }).nullable()
    .describe('who started the run: an API key\'s id and name (API_KEY: "api_key"; the operator: "operator"); '
      + 'a sub-agent\'s run: who started its root; null for runs started before the engine recorded it'),
  status: runStatus, stopReason,
  version: z.object({ deployment: z.string(), buildId: z.string() }).nullable()
    .describe('the Worker Deployment and build the run\'s last turn ran on (WORKER_DEPLOYMENT_NAME); '
      + 'null when its workers are unversioned'),
  limitReached: z.string().nullable()
    .meta({ enum: ['maxToolCalls', 'maxInputTokens', 'maxOutputTokens', 'maxCostUsd', 'maxDuration', null] })
    .describe('with stopReason "budget": the limit (the agent\'s or the run\'s `limits`) that stopped the run; else null'),
  output: z.string().nullable(),
  error: z.object({ type: z.string(), message: z.string() }).nullable(),
  turns: z.int(),
  usage: usage.describe('the tokens of this run\'s own LLM turns (and of its servers\' sampling requests)'),
  prefix: z.object({ tokens: z.int(), tokensEstimated: z.boolean() }).nullable()
    .describe('the prompt prefix\'s tokens (instructions and injected prompts), once the run has counted them; '
      + 'see GET /v1/agents/{id}/context'),
  usageWithChildren: usage.describe('usage, plus that of the runs it started as sub-agents'),
  cost: costSchema
    .describe('what the run\'s completed LLM turns cost, from the operator\'s price table (PRICES_FILE) when each turn ended'),
  costWithChildren: costSchema.describe('cost, plus that of the runs it started as sub-agents'),
  toolCalls: z.array(z.object({
    id: z.string(), turn: z.int(),
    name: z.string().describe('as the LLM saw it'),
    type: toolType,
    integrationId: z.string().optional(), status: z.enum(['ok', 'error']),
    durationMs: z.int(), result: z.string().describe('a preview of at most 2 KB'),
    resultBytes: z.int(),
    arguments: z.string().optional().describe('the arguments as JSON text, cut at 2000 characters'),
    argumentsBytes: z.int().optional(),
    childRunId: z.string().optional().describe('a sub-agent\'s call (type sub_agent): the run it started'),
    replayed: z.enum(['recorded', 'not_recorded']).optional().describe('a replay\'s call answered from the recording: recorded, '
      + 'the original\'s result whole; not_recorded, the original made no such call (docs/time-travel.md); absent: the call ran'),
  })),
  pendingApprovals: z.array(z.object({
    runId: waitingRun,
    toolCallId: z.string().describe('what to decide by: the tool call\'s id, or a sampling request\'s samp_… id'),
    kind: z.enum(['tool_call', 'sampling']).optional()
      .describe('sampling: an MCP server (sampling "approve") asks to sample the run\'s model during the tool call `forToolCallId`; '
        + 'absent: a tool call'),
    turn: z.int(), name: z.string().describe('as the LLM saw it (for sampling, the tool call that asks)'),
    integrationId: z.string().nullable(),
    forToolCallId: z.string().optional().describe('sampling: the tool call during which the server asks'),
    arguments: z.unknown().describe('the arguments the LLM gave, read from the transcript; for sampling, what the model would get: '
      + '{messages: [{role, text}], systemPrompt?, maxTokens}'),
    requestedAt: timestamp,
    expiresAt: timestamp.describe('when the call is answered "not approved" (a sampling request: refused) unless decided'),
  })).describe('tool calls and sampling requests waiting for a decision (POST /v1/runs/{id}/approvals/{toolCallId}); '
    + 'empty once the run has ended'),
  pendingInputs: z.array(pendingInputSchema)
    .describe('questions MCP servers (integrations with elicitation) asked during tool calls, '
      + 'waiting for POST /v1/runs/{id}/inputs/{inputId}'),
  pendingBudget: pendingBudgetSchema.nullable()
    .describe('a reached limit waits for a person (limits.onLimit "ask"): POST /v1/runs/{id}/budget raises it or stops the run; '
      + 'null when the run does not wait for budget'),
  pendingCallerTools: z.array(pendingCallerToolSchema)
    .describe('calls of the tools the run\'s caller runs (callerTools), waiting for POST /v1/runs/{id}/tool-results/{toolCallId}, '
      + 'in the order the model made them; empty once the run has ended'),
  createdAt: timestamp, endedAt: timestamp.nullable(),
}).meta({ id: 'Run' });


export type RunView = z.infer<typeof runViewSchema>;
export type PendingInputView = z.infer<typeof pendingInputSchema>;
export type PendingCallerToolView = z.infer<typeof pendingCallerToolSchema>;
