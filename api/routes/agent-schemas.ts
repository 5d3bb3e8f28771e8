import { z } from 'zod';
import { agentSchema } from '../../core/agent';

export const agentListSchema = z.object({ agents: z.array(agentSchema) });

const prefixSource = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('instructions') }).describe('the agent\'s own instructions'),
  z.object({ kind: z.literal('prompt'), integrationId: z.string(), integrationName: z.string(), prompt: z.string() })
    .describe('a conventional prompt of one of the agent\'s integrations, by its name on the server'),
]);

const contextMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) })).optional(),
  toolCallId: z.string().optional(),
  sources: z.array(prefixSource).describe('what the message was made of, in order: the system message joins several'),
  tokens: z.int().describe('its content, plus its tool calls\' names and arguments'),
});

export const contextQuery = z.strictObject({
  threadId: z.string().min(1).max(128).optional()
    .describe('a thread whose metadata the agent\'s promptWhen conditions are tested against; without it, no thread metadata matches'),
});

const promptDecision = z.object({
  integrationId: z.string(), integrationName: z.string(),
  prompt: z.string().nullable().describe('a conventional prompt by its name on the server; null: the whole integration'),
  injected: z.boolean(),
  reason: z.string().describe('e.g. "promptWhen not met: model gpt-4o matches none of claude-*", "system_prompt is always injected"'),
});

export const agentContextSchema = z.object({
  messages: z.array(contextMessage),
  decisions: z.array(promptDecision)
    .describe('why each conventional prompt was or was not injected, integration by integration in prefix order'),
  totalTokens: z.int().describe('the sum of the messages\' tokens, without the few tokens a provider adds around each message'),
  tokensEstimated: z.boolean()
    .describe('true: counted (in whole or in part) as 4 characters a token, the model having no exact tokenizer here'),
  tokenizer: z.enum(['o200k_base', 'cl100k_base', 'chars/4'])
    .describe('how tokens were counted: the OpenAI encoding of the agent\'s model, or the estimate'),
});
