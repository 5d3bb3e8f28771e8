import { z } from 'zod';
import { MESSAGE_PREVIEW_CHARS } from '../../use-cases/threads/threads';
import { id, queryInteger, timestamp } from '../schemas';
import { threadMetadataSchema } from '../../core/prompt-conditions';
import { costSchema, forkedFromSchema } from '../../core/run-view';

const metadataOut = z.record(z.string(), z.string())
  .describe('set by callers (POST and PATCH); an agent\'s promptWhen conditions may test it');

export const threadSchema = z.object({
  id, agentId: id, metadata: metadataOut,
  forkedFrom: forkedFromSchema.nullable().describe('a fork\'s thread (POST /v1/runs/{id}/fork): the run and the turn its conversation '
    + 'was forked from; else null'),
  createdAt: timestamp,
}).meta({ id: 'Thread' });

/** GET /v1/threads/:id: the thread with its runs' cost (not in lists, nor in POST's and PATCH's answers). */
export const threadWithCostSchema = threadSchema.extend({
  cost: costSchema.describe('what the completed LLM turns of the thread\'s runs cost, from the operator\'s price table (PRICES_FILE)'),
  costWithChildren: costSchema.describe('cost, plus that of the runs they started as sub-agents (on threads of their own)'),
}).meta({ id: 'ThreadWithCost' });

export const createThreadBody = z.strictObject({
  agentId: id.describe('an agent id or name'),
  metadata: threadMetadataSchema.optional(),
});

export const changeThreadBody = z.strictObject({
  metadata: threadMetadataSchema.describe('replaces the thread\'s metadata whole; {} clears it'),
});

export const threadsQuery = z.strictObject({
  agentId: id.optional().describe('an agent id or name'),
  cursor: z.string().min(1).max(512).regex(/^[A-Za-z0-9_-]+$/).optional().describe('nextCursor of the previous page'),
  limit: queryInteger(1, 100).default(20),
});

export const threadPageSchema = z.object({
  threads: z.array(z.object({
    id: z.string(), agentId: z.string(), agentName: z.string(), metadata: metadataOut,
    messageCount: z.int(), lastMessageAt: timestamp.nullable(), createdAt: timestamp,
  })),
  nextCursor: z.string().nullable(),
});

export const messagesQuery = z.strictObject({
  after: queryInteger(0, 2_147_483_647).default(0).describe('seq of the last message already read (nextAfter of the previous page)'),
  limit: queryInteger(1, 200).default(50),
});

const cut = `cut at ${MESSAGE_PREVIEW_CHARS} characters`;

/** What a person reads of a message, in a thread's conversation or a run's (GET /v1/runs/:id/messages). */
export const messagePreviewFields = {
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().describe(cut),
  contentBytes: z.int().describe('the full content\'s size in UTF-8 bytes'),
  contentTruncated: z.boolean(),
  toolCalls: z.array(z.object({
    id: z.string(), name: z.string(),
    arguments: z.string().describe(`the arguments as JSON text, ${cut}`),
    argumentsBytes: z.int(), argumentsTruncated: z.boolean(),
  })).optional(),
  toolCallId: z.string().optional().describe('tool results: the call answered'),
  toolName: z.string().optional(),
  createdAt: timestamp,
};

export const messagePageSchema = z.object({
  messages: z.array(z.object({
    seq: z.int(),
    runId: z.string().describe('the run that wrote it ("template": an agent file\'s template)'),
    agentId: z.string().describe('the agent of that run, which may be another than the thread\'s (a template is the thread\'s agent\'s)'),
    agentName: z.string(),
    ...messagePreviewFields,
  })),
  nextAfter: z.int().nullable().describe('pass as ?after= for the next page; null on the last page'),
});
