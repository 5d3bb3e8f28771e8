import { SUB_AGENT_INPUT_SCHEMA, type SubAgentRoute } from '../core/sub-agents';
import type { ToolDefinition } from '../core/messages';
import { subAgentsByIds } from '../store/sub-agents';
import { findRunCallerTools } from '../store/caller-tools';
import type { ActivityDeps } from './deps';
import { offeredTools, type OfferedTool } from './refused-calls';
import { runIntegrations } from './run-snapshots';
import { nativeTools } from './tools';
import { mcpToolDefinitions } from './tools/mcp-tool';
import { toolInputSchema } from './tools/native-tool';

/** What a turn knows of the tools it may offer. */
export interface TurnToolsInput {
  runId: string;
  threadId: string;
  /** the native tools this turn offers, by name */
  nativeTools: string[];
  /** false when the thread has no data sources yet, so describing source_query needs no read (absent: unknown) */
  hasDataSources?: boolean;
  /** the run's sub-agents, offered as tools (core/sub-agents.ts) */
  subAgents?: Record<string, SubAgentRoute>;
  /** the names of the tools the run's caller runs, offered as the caller declared them (core/caller-tools.ts) */
  callerTools?: string[];
}

/**
 * What the LLM is told of its tools this turn: the run's MCP tools, the native tools offered, its sub-agents and its caller's tools;
 * and, for the calls a turn does not run, each one's kind.
 */
export async function turnTools(
  deps: ActivityDeps, input: TurnToolsInput,
): Promise<{ definitions: ToolDefinition[]; offered: () => Map<string, OfferedTool> }> {
  const integrations = await runIntegrations(deps.db, input.runId);
  const offered = nativeTools.filter((t) => input.nativeTools.includes(t.tool.name));
  const context = { deps, threadId: input.threadId, integrations, hasDataSources: input.hasDataSources !== false };
  const natives = await Promise.all(offered.map(async (t): Promise<ToolDefinition> => ({
    name: t.tool.name, description: await t.describe(context), inputSchema: toolInputSchema(t.tool),
  })));
  const subAgents = await subAgentDefinitions(deps, input.subAgents);
  const others = [...mcpToolDefinitions(integrations), ...natives, ...subAgents];
  const callers = await callerToolDefinitions(deps, input, new Set(others.map((d) => d.name)));
  return {
    definitions: [...others, ...callers],
    offered: () => offeredTools(integrations, offered.map((t) => t.tool), subAgents.map((d) => d.name), callers.map((d) => d.name)),
  };
}

/**
 * The caller's tools, as it declared them. A name another tool of the run has (refused at the
 * start; an integration renamed since could make one) is left out: the model must not see two.
 */
async function callerToolDefinitions(deps: ActivityDeps, input: TurnToolsInput, taken: Set<string>): Promise<ToolDefinition[]> {
  if (!input.callerTools?.length) return [];
  const declared = await findRunCallerTools(deps.db, input.runId);
  const tools = (declared?.tools ?? []).filter((t) => input.callerTools!.includes(t.name));
  const clashing = tools.filter((t) => taken.has(t.name)).map((t) => t.name);
  if (clashing.length > 0) {
    deps.logger.warn({ runId: input.runId, clashing }, 'caller tools named as other tools of the run are not offered');
  }
  return tools.filter((t) => !taken.has(t.name))
    .map((t) => ({ name: t.name, description: t.description ?? '', inputSchema: t.inputSchema }));
}

/** Each sub-agent as a tool: its description (or what it is), and `{input}`. */
async function subAgentDefinitions(deps: ActivityDeps, routes: TurnToolsInput['subAgents']): Promise<ToolDefinition[]> {
  const entries = Object.entries(routes ?? {});
  if (entries.length === 0) return [];
  const agents = await subAgentsByIds(deps.db, entries.map(([, r]) => r.agentId));
  return entries.map(([name, route]) => ({
    name, inputSchema: SUB_AGENT_INPUT_SCHEMA as unknown as Record<string, unknown>,
    description: agents.find((a) => a.id === route.agentId)?.description ?? `Asks the agent ${route.agentName}; its answer is the result.`,
  }));
}
