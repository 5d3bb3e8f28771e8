import { z } from 'zod';
import { modelSchema } from '../../core/agent-model';
import { runLimitsSchema } from '../../core/run-limits';
import { MAX_SUB_AGENTS } from '../../core/sub-agents';
import { promptConditionSchema } from '../../core/prompt-conditions';
import { callerToolsSchema } from '../../core/caller-tool-schema';

/** What a caller may send to create or change an agent; the API checks requests against these and the use cases take their types. */

export const agentModelSchema = modelSchema.meta({ id: 'AgentModel', description: 'The LLM behind an agent, keyed on provider' });

const integrationRef = z.string().min(1).max(128);
const description = z.string().max(10_000);
const instructions = z.string().max(1_000_000);

const agentFields = {
  name: z.string().min(1).max(64).regex(/^[a-zA-Z][a-zA-Z0-9_-]*$/),
  model: agentModelSchema,
  integrationIds: z.array(integrationRef).max(100)
    .refine((refs) => new Set(refs).size === refs.length, 'must not name an integration twice')
    .meta({ uniqueItems: true, description: 'integration ids or names' }),
  promptOrder: z.array(integrationRef).max(100)
    .refine((refs) => new Set(refs).size === refs.length, 'must not name an integration twice')
    .meta({
      uniqueItems: true,
      description: 'integration ids or names, each one of the agent\'s integrations: their conventional prompts come first '
        + 'in the prompt prefix, in this order, the others after in integrationIds order; stored as ids. [] clears it; '
        + 'new integrationIds alone keep the entries still among them',
    }),
  promptWhen: z.record(integrationRef, promptConditionSchema)
    .refine((when) => Object.keys(when).length <= 100, 'at most 100 integrations')
    .meta({
      description: 'integration id or name (each one of the agent\'s integrations) to the condition on its optional '
        + 'conventional prompts: all but system_prompt, which is always injected; stored by id. {} clears it; '
        + 'new integrationIds alone keep the entries still among them',
    }),
  maxTurns: z.int().min(1).max(1000),
  maxToolResultBytes: z.int().min(1024).max(16 * 1024 * 1024)
    .describe('how much of any one tool result the LLM sees (default 65,536); the transcript keeps it whole'),
  mcpTasks: z.boolean().describe('false: MCP clients always call the agent as a plain tool, never as a task (default true)'),
  subAgents: z.array(z.string().min(1).max(128)).max(MAX_SUB_AGENTS)
    .refine((refs) => new Set(refs).size === refs.length, 'must not name an agent twice')
    .meta({
      uniqueItems: true,
      description: 'agent ids or names, resolved to ids when saved: its runs may call each as a tool `agent__<name>` (a child run)',
    }),
  limits: runLimitsSchema.describe('the budget of each run: tool calls (in all, and per turn), input and output tokens, duration; '
    + 'a run stopped by one ends completed, stopReason "budget"'),
  callerTools: callerToolsSchema.describe('the caller tools of each run that declares none of its own (a default); [] clears them'),
};

export const createAgentRequest = z.strictObject({
  ...agentFields,
  description: description.optional(),
  instructions: instructions.optional(),
  integrationIds: agentFields.integrationIds.optional(),
  promptOrder: agentFields.promptOrder.optional(),
  promptWhen: agentFields.promptWhen.optional(),
  maxTurns: agentFields.maxTurns.optional(),
  maxToolResultBytes: agentFields.maxToolResultBytes.optional(),
  mcpTasks: agentFields.mcpTasks.optional(),
  limits: agentFields.limits.optional(),
  subAgents: agentFields.subAgents.optional(),
  callerTools: agentFields.callerTools.optional(),
});

export const changeAgentRequest = z.strictObject({
  name: agentFields.name.optional(),
  model: agentFields.model.optional(),
  description: description.nullable().optional().describe('null clears it'),
  instructions: instructions.nullable().optional().describe('null clears it'),
  integrationIds: agentFields.integrationIds.optional(),
  promptOrder: agentFields.promptOrder.optional(),
  promptWhen: agentFields.promptWhen.optional(),
  maxTurns: agentFields.maxTurns.optional(),
  maxToolResultBytes: agentFields.maxToolResultBytes.optional(),
  mcpTasks: agentFields.mcpTasks.optional(),
  limits: agentFields.limits.nullable().optional().describe('null clears them'),
  subAgents: agentFields.subAgents.optional(),
  callerTools: agentFields.callerTools.optional(),
}).refine((changes) => Object.keys(changes).length > 0, 'give at least one field to change').meta({ minProperties: 1 });

export type CreateAgentRequest = z.infer<typeof createAgentRequest>;
export type ChangeAgentRequest = z.infer<typeof changeAgentRequest>;
