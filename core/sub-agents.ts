/**
 * Sub-agents: an agent's `subAgents` are offered to its runs' LLM as tools `agent__<name>`
 * (`{input}`), and a call runs the sub-agent as a child run workflow on a new thread. Pure: the
 * workflow, the activities and the API read these bounds and texts.
 */

export const SUB_AGENT_TOOL_PREFIX = 'agent__';
/** Tool names are `<integration>__<tool>`: an integration named so would shadow the sub-agents. */
export const RESERVED_INTEGRATION_NAME = 'agent';
/** A root run is at depth 0; a run at this depth is offered no sub-agents. */
export const MAX_SUB_AGENT_DEPTH = 3;
/** Children of one run running at once; more calls wait for one to end. */
export const MAX_CHILDREN_AT_ONCE = 4;
/** Runs a root run may start below it, at every depth. */
export const MAX_DESCENDANTS = 20;
/** How many sub-agents an agent may list. */
export const MAX_SUB_AGENTS = 32;

/** The tool a sub-agent is offered as: its name, sanitised to `^[a-zA-Z0-9_-]{1,64}$`. */
export function subAgentToolName(agentName: string): string {
  return `${SUB_AGENT_TOOL_PREFIX}${agentName.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64);
}

/** The input schema of every sub-agent tool. */
export const SUB_AGENT_INPUT_SCHEMA = {
  type: 'object',
  properties: { input: { type: 'string', description: 'what to ask the agent' } },
  required: ['input'],
  additionalProperties: false,
} as const;

/** A sub-agent as the workflow routes its tool. */
export interface SubAgentRoute {
  agentId: string;
  agentName: string;
  /** whether the sub-agent has integrations: its run's preparation then discovers them (RunWorkflowInput.discovers) */
  hasIntegrations?: boolean;
}

export const subAgentText = {
  badInput: (name: string) => `Sub-agent call ${name} needs {"input": "<text>"} (a non-empty string).`,
  failed: (name: string, message: string) => `Sub-agent ${name} failed: ${message}`,
  cancelled: (name: string) => `Sub-agent ${name} was cancelled before it answered.`,
  stopped: (name: string, reason: string, output: string) =>
    `Sub-agent ${name} stopped (${reason})${output ? `: ${output}` : ' without an answer.'}`,
  tooMany: (max: number) => `Sub-agent not started: the run and its sub-agents may start at most ${max} runs below the first.`,
};
