import { z } from 'zod';
import type { ModelConfig } from './agent-model';
import { runLimitsSchema } from './run-limits';
import { callerToolsSchema } from './caller-tool-schema';

/**
 * An agent as the API answers with it and documents it (/docs), and, inferred from that schema, as
 * the engine holds it. Its model is written as stored: it was checked against the agent model
 * (agent-model.ts) on the way in, and a response must not fail on one stored by an older engine.
 */
const id = z.string().min(1).max(128);
const timestamp = z.string().meta({ format: 'date-time' });

export const agentSchema = z.object({
  id, name: z.string(), description: z.string().nullable(), instructions: z.string().nullable(),
  // Written as stored: the model was checked against AgentModel on the way in.
  model: z.record(z.string(), z.unknown()).describe('see AgentModel'),
  integrationIds: z.array(z.string()),
  promptOrder: z.array(z.string())
    .describe('integration ids whose conventional prompts come first in the prompt prefix, in this order; '
      + 'the others follow in integrationIds order'),
  promptWhen: z.record(z.string(), z.object({
    models: z.array(z.string()).optional(), threadMetadata: z.record(z.string(), z.string()).optional(),
  }))
    .describe('integration id to the condition on its optional conventional prompts (all but system_prompt): '
      + '`models` globs, `threadMetadata` values'),
  maxTurns: z.int(),
  maxToolResultBytes: z.int().describe('how much of any one tool result the LLM sees; the transcript keeps it whole'),
  subAgents: z.array(z.string()).describe('the agents (ids) its runs may call as tools `agent__<name>`, each a child run'),
  limits: runLimitsSchema.nullable().describe('the budget of each of its runs (a run\'s own limits can only tighten it); '
    + 'null: only maxTurns and the default maxToolCallsPerTurn'),
  callerTools: callerToolsSchema.describe('tools the caller of each run runs itself, unless the run declares its own '
    + '(POST /v1/threads/{id}/runs, POST /v1/runs); [] when none. Over /mcp such an agent cannot be called'),
  mcpTasks: z.boolean().describe('whether an MCP client may call the agent as a task '
    + '(default true; the engine setting MCP_AGENT_TASKS can turn tasks off for all)'),
  sourceFile: z.string().nullable().describe('the agent file that defines the agent; such an agent is changed by editing its file'),
  disabledAt: timestamp.nullable()
    .describe('when the agent was deleted while threads or runs referred to it; a disabled agent takes no new threads or runs'),
  createdAt: timestamp, updatedAt: timestamp,
}).meta({ id: 'Agent' });

export type Agent = Omit<z.infer<typeof agentSchema>, 'model'> & { model: ModelConfig };
