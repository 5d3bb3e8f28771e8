import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { TOOL_TYPES } from '../workflows/tool-kinds';
import { MAX_RUN_INPUT_CHARS } from '../use-cases/runs/start-run';
import { PROBLEM_CONTENT_TYPE } from './problem';

/**
 * JSON Schemas of the HTTP contract. Shared shapes are registered once with an $id, so that
 * routes reference them and the OpenAPI document names them.
 */

const id = { type: 'string', minLength: 1, maxLength: 128 } as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const nullable = (type: string) => ({ type: [type, 'null'] });

const problemSchema = {
  $id: 'Problem',
  description: 'RFC 9457 problem details',
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string', description: 'machine-readable cause, e.g. thread_busy, conflict, validation' },
    checks: { type: 'object', additionalProperties: { type: 'string' } },
    featuresOff: { type: 'array', items: { type: 'string' }, description: 'with code not_ready: what is off until the operator configures it' },
    field: { type: 'string', description: 'with code admin_required: the field only the operator may set; with validation: the field at fault' },
    approvalStatus: { type: 'string', description: 'with code already_decided: approved, denied, timed_out or cancelled' },
    decision: { type: ['string', 'null'], description: 'with code already_decided: the earlier decision (approve or deny), null when none was made' },
    authorization: { type: 'string', description: 'with code authorization_required: required or expired' },
  },
} as const;

const threadSchema = {
  $id: 'Thread',
  type: 'object',
  required: ['id', 'agentId', 'createdAt'],
  properties: { id, agentId: id, createdAt: timestamp },
} as const;

export const runStatus = { type: 'string', enum: ['running', 'completed', 'failed', 'cancelled'] } as const;

const runAcceptedSchema = {
  $id: 'RunAccepted',
  type: 'object',
  required: ['id', 'threadId', 'status'],
  properties: { id, threadId: id, status: runStatus },
} as const;

const runSchema = {
  $id: 'Run',
  type: 'object',
  required: ['id', 'threadId', 'agentId', 'status', 'stopReason', 'output', 'error', 'turns', 'usage', 'toolCalls', 'pendingApprovals', 'pendingInputs', 'createdAt', 'endedAt'],
  properties: {
    id, threadId: id, agentId: id, status: runStatus,
    stopReason: { type: ['string', 'null'], enum: ['answer', 'max_turns', 'cancelled', 'error', null] },
    output: nullable('string'),
    error: {
      type: ['object', 'null'], required: ['type', 'message'],
      properties: { type: { type: 'string' }, message: { type: 'string' } },
    },
    turns: { type: 'integer' },
    usage: {
      type: 'object', required: ['inputTokens', 'outputTokens'],
      properties: { inputTokens: { type: 'integer' }, outputTokens: { type: 'integer' } },
    },
    toolCalls: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'turn', 'name', 'type', 'status', 'durationMs', 'result', 'resultBytes'],
        properties: {
          id: { type: 'string' }, turn: { type: 'integer' },
          name: { type: 'string', description: 'as the LLM saw it' },
          type: { type: 'string', enum: TOOL_TYPES },
          integrationId: { type: 'string' }, status: { type: 'string', enum: ['ok', 'error'] },
          durationMs: { type: 'integer' }, result: { type: 'string', description: 'a preview of at most 2 KB' },
          resultBytes: { type: 'integer' },
          arguments: { type: 'string', description: 'the arguments as JSON text, cut at 2000 characters' },
          argumentsBytes: { type: 'integer' },
        },
      },
    },
    pendingApprovals: {
      type: 'array',
      description: 'tool calls waiting for a decision (POST /v1/runs/{id}/approvals/{toolCallId}); empty once the run has ended',
      items: {
        type: 'object',
        required: ['toolCallId', 'turn', 'name', 'integrationId', 'arguments', 'requestedAt', 'expiresAt'],
        properties: {
          toolCallId: { type: 'string' }, turn: { type: 'integer' }, name: { type: 'string', description: 'as the LLM saw it' },
          integrationId: { type: ['string', 'null'] },
          arguments: { description: 'the arguments the LLM gave, read from the transcript' },
          requestedAt: timestamp, expiresAt: { ...timestamp, description: 'when the call is answered "not approved" unless decided' },
        },
      },
    },
    pendingInputs: {
      type: 'array',
      description: 'questions MCP servers (integrations with elicitation) asked during tool calls, waiting for POST /v1/runs/{id}/inputs/{inputId}',
      items: { $ref: 'PendingInput#' },
    },
    createdAt: timestamp, endedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

const pendingInputSchema = {
  $id: 'PendingInput',
  type: 'object',
  required: ['inputId', 'toolCallId', 'mode', 'message', 'requestedAt', 'expiresAt'],
  properties: {
    inputId: id, toolCallId: { type: 'string' },
    mode: { type: 'string', enum: ['form', 'url'], description: 'form: answer with content matching requestedSchema; url: the user completes it at url' },
    message: { type: 'string' },
    requestedSchema: { type: 'object', additionalProperties: true, description: 'form mode: a flat object schema of primitive fields' },
    url: { type: 'string', description: 'url mode: where the user completes the interaction' },
    requestedAt: timestamp,
    expiresAt: { ...timestamp, description: 'after this the tool call declines the question' },
  },
} as const;

export const sharedSchemas = fp(async (app: FastifyInstance) => {
  for (const schema of [problemSchema, threadSchema, runAcceptedSchema, pendingInputSchema, runSchema]) {
    app.addSchema(schema);
  }
}, { name: 'shared-schemas' });

export const ref = (schemaId: string) => ({ $ref: `${schemaId}#` });

/** A problem response, documented with its real media type. */
export const problemResponse = (description: string) => ({
  description,
  content: { [PROBLEM_CONTENT_TYPE]: { schema: ref('Problem') } },
});

export const idParams = {
  type: 'object', required: ['id'], properties: { id }, additionalProperties: false,
} as const;

export const createThreadBody = {
  type: 'object', required: ['agentId'], additionalProperties: false, properties: { agentId: { ...id, description: 'an agent id or name' } },
} as const;

export const startRunBody = {
  type: 'object',
  required: ['input'],
  additionalProperties: false,
  properties: {
    input: { type: 'string', minLength: 1, maxLength: MAX_RUN_INPUT_CHARS },
    agentId: {
      ...id,
      description: 'runs this turn of the thread with another agent (id or name), which sees the thread\'s messages; the run and its messages '
        + 'record that agent, the thread keeps its own, and a run without agentId is the thread\'s own agent\'s',
    },
  },
} as const;

export const startOneShotRunBody = {
  type: 'object',
  required: ['agentId', 'input'],
  additionalProperties: false,
  properties: {
    agentId: { ...id, description: 'an agent id or name' },
    input: startRunBody.properties.input,
  },
} as const;

export const startRunHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string', minLength: 1, maxLength: 255,
      description: 'the same key with the same body gives the same run; with another body, 409',
    },
  },
} as const;

export const MAX_WAIT_MS = 30_000;

export const readRunQuery = {
  type: 'object',
  properties: {
    waitMs: {
      type: 'integer', minimum: 0, maximum: MAX_WAIT_MS, default: 0,
      description: 'long-poll: answer as soon as the run has ended, or after this many ms',
    },
  },
} as const;

/** The longest reviewer note a decision may carry; the LLM reads it. */
export const MAX_APPROVAL_REASON_CHARS = 4000;

export const decideApprovalBody = {
  type: 'object', required: ['decision'], additionalProperties: false,
  properties: {
    decision: { type: 'string', enum: ['approve', 'deny'] },
    reason: { type: 'string', minLength: 1, maxLength: MAX_APPROVAL_REASON_CHARS, description: 'a note for the LLM; with deny it reads "Tool call denied by a reviewer: {reason}"' },
  },
} as const;
