import { z } from 'zod';
import { id, timestamp } from '../schemas';

export const agentSchema = z.object({
  id, name: z.string(), description: z.string().nullable(), instructions: z.string().nullable(),
  // Written as stored: the model was checked against AgentModel on the way in.
  model: z.record(z.string(), z.unknown()).describe('see AgentModel'),
  integrationIds: z.array(z.string()),
  maxTurns: z.int(), maxToolResultBytes: z.int().optional(),
  sourceFile: z.string().nullable().describe('the agent file that defines the agent; such an agent is changed by editing its file'),
  disabledAt: timestamp.nullable()
    .describe('when the agent was deleted while threads or runs referred to it; a disabled agent takes no new threads or runs'),
  createdAt: timestamp, updatedAt: timestamp,
}).meta({ id: 'Agent' });

export const agentListSchema = z.object({ agents: z.array(agentSchema) });

const contextMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) })).optional(),
  toolCallId: z.string().optional(),
});

export const agentContextSchema = z.object({ messages: z.array(contextMessage) });
