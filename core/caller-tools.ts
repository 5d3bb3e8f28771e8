import { NATIVE_TOOL_KINDS } from './native-tool-kinds';
import { SUB_AGENT_TOOL_PREFIX } from './sub-agents';

/*
 * Caller tools: tools a run's caller runs itself. A run start (or its agent, as a default) declares
 * them; the LLM sees each under its own name; a call is stored and the run waits, durably, for the
 * caller's answer (POST /v1/runs/:id/tool-results/:toolCallId). Pure: the workflow, its activities
 * and the API share these names, bounds and texts (the declarations' schema is caller-tool-schema.ts).
 */

/** A tool as its caller declares it; the LLM reads the name, the description and the input schema. */
export interface CallerTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** The signal that tells a run a caller answered one of its calls; its payload: the tool call's id only. */
export const CALLER_TOOL_ANSWERED_SIGNAL = 'callerToolAnswered';

export const MAX_CALLER_TOOLS = 32;
/** A tool's inputSchema, as JSON text. */
export const MAX_CALLER_TOOL_SCHEMA_BYTES = 16 * 1024;
export const MAX_CALLER_TOOL_DESCRIPTION_CHARS = 10_000;
/** Names the LLM providers take (OpenAI's rule, the strictest), which MCP tool names include. */
export const CALLER_TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The most text a caller's answer may give the model: an MCP tool result's bound (an integration's
 * default maxResultBytes, core/integration.ts). The request that carries it may be up to
 * MAX_CALLER_TOOL_ANSWER_BYTES, an MCP message's bound for such a result (binary content is shown
 * to the model as a placeholder).
 */
export const MAX_CALLER_TOOL_RESULT_BYTES = 1024 * 1024;
export const MAX_CALLER_TOOL_ANSWER_BYTES = 2 * MAX_CALLER_TOOL_RESULT_BYTES + 1024 * 1024;

export const DEFAULT_CALLER_TOOL_TIMEOUT_MS = 10 * 60_000;
export const MAX_CALLER_TOOL_TIMEOUT_MS = 24 * 3_600_000;

/**
 * How long checking a model's arguments against a tool's schema may take (its `pattern` and
 * `format` checks included): past it the arguments are refused, never run for longer.
 */
export const SCHEMA_CHECK_TIMEOUT_MS = 250;

/** What the LLM reads, and what a caller over MCP is told (contract). */
export const callerToolText = {
  notAnswered: (name: string, timeout: string) => `Caller tool ${name} was not answered within ${timeout}.`,
  invalidArguments: (name: string, problem: string) => `Invalid arguments for caller tool ${name}: ${problem}`,
  failed: (name: string, message: string) => `Caller tool ${name} failed: ${message}`,
  tooLarge: (name: string, max: number) => `Caller tool ${name} failed: its result exceeds ${max} bytes`,
  mcpRefused: 'This agent needs tools its caller runs (callerTools); start it through the HTTP API.',
};

/**
 * Why `name` may not be a caller tool of a run whose agent has these integrations: it would be
 * another tool of the run (a native tool, a sub-agent's `agent__…`, an integration's
 * `<integration>__<tool>`, whichever tools the integration lists now or later). Undefined when it may.
 */
export function callerToolNameClash(name: string, integrationNames: readonly string[]): string | undefined {
  if (NATIVE_TOOL_KINDS.some((t) => t.name === name)) return `${name} is a native tool of the run`;
  if (name.startsWith(SUB_AGENT_TOOL_PREFIX)) return `${name} would be a sub-agent's tool (${SUB_AGENT_TOOL_PREFIX}<name>)`;
  // Tool names past 64 characters keep the start of the integration's name (mcp-client/naming.ts).
  const integration = integrationNames.find((i) => name.startsWith(`${i}__`) || (i.length > 54 && name.startsWith(i.slice(0, 55))));
  if (integration) return `${name} would be a tool of the run's integration ${integration} (its tools are ${integration}__<tool>)`;
  return undefined;
}
