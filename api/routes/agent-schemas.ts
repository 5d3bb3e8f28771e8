import { z } from 'zod';
import { agentSchema } from '../../core/agent';

export const agentListSchema = z.object({ agents: z.array(agentSchema) });

const contextMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) })).optional(),
  toolCallId: z.string().optional(),
});

export const agentContextSchema = z.object({ messages: z.array(contextMessage) });
