import { SUB_AGENT_INPUT_SCHEMA, type SubAgentRoute } from '../core/sub-agents';
import type { ToolDefinition } from '../core/messages';
import { subAgentsByIds } from '../store/sub-agents';
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
}

/**
 * What the LLM is told of its tools this turn: the run's MCP tools and the native tools offered;
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
  return {
    definitions: [...mcpToolDefinitions(integrations), ...natives, ...subAgents],
    offered: () => offeredTools(integrations, offered.map((t) => t.tool), subAgents.map((d) => d.name)),
  };
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
