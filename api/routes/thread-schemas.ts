import { MESSAGE_PREVIEW_CHARS } from '../../store/threads/thread-messages';

const timestamp = { type: 'string', format: 'date-time' } as const;

export const threadsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    agentId: { type: 'string', minLength: 1, maxLength: 128, description: 'an agent id or name' },
    cursor: { type: 'string', minLength: 1, maxLength: 512, pattern: '^[A-Za-z0-9_-]+$', description: 'nextCursor of the previous page' },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
} as const;

export const threadPageSchema = {
  type: 'object',
  required: ['threads', 'nextCursor'],
  properties: {
    threads: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'agentId', 'agentName', 'messageCount', 'lastMessageAt', 'createdAt'],
        properties: {
          id: { type: 'string' }, agentId: { type: 'string' }, agentName: { type: 'string' },
          messageCount: { type: 'integer' }, lastMessageAt: { type: ['string', 'null'], format: 'date-time' }, createdAt: timestamp,
        },
      },
    },
    nextCursor: { type: ['string', 'null'] },
  },
} as const;

export const messagesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    after: { type: 'integer', minimum: 0, maximum: 2_147_483_647, default: 0, description: 'seq of the last message already read (nextAfter of the previous page)' },
    limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
  },
} as const;

const cut = `cut at ${MESSAGE_PREVIEW_CHARS} characters`;

export const messagePageSchema = {
  type: 'object',
  required: ['messages', 'nextAfter'],
  properties: {
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['seq', 'runId', 'agentId', 'agentName', 'role', 'content', 'contentBytes', 'contentTruncated', 'createdAt'],
        properties: {
          seq: { type: 'integer' },
          runId: { type: 'string', description: 'the run that wrote it ("template": an agent file\'s template)' },
          agentId: { type: 'string', description: 'the agent of that run, which may be another than the thread\'s (a template is the thread\'s agent\'s)' },
          agentName: { type: 'string' },
          role: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] },
          content: { type: 'string', description: cut },
          contentBytes: { type: 'integer', description: 'the full content\'s size in UTF-8 bytes' },
          contentTruncated: { type: 'boolean' },
          toolCalls: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'name', 'arguments', 'argumentsBytes', 'argumentsTruncated'],
              properties: {
                id: { type: 'string' }, name: { type: 'string' },
                arguments: { type: 'string', description: `the arguments as JSON text, ${cut}` },
                argumentsBytes: { type: 'integer' }, argumentsTruncated: { type: 'boolean' },
              },
            },
          },
          toolCallId: { type: 'string', description: 'tool results: the call answered' },
          toolName: { type: 'string' },
          createdAt: timestamp,
        },
      },
    },
    nextAfter: { type: ['integer', 'null'], description: 'pass as ?after= for the next page; null on the last page' },
  },
} as const;
