/**
 * Pure tool routing: which tools a turn offers, and where a call goes.
 * The MCP issues add routes for integrations; the shapes are already here.
 */
export type ToolType = 'mcp_tool' | 'mcp_resource' | 'mcp_prompt' | 'source_query' | 'unknown';

export type ToolRoute =
  | McpToolRoute
  | { type: 'mcp_resource' }
  | { type: 'mcp_prompt' }
  | { type: 'source_query' };

/**
 * Where an MCP tool call goes, decided once per run by discovery. It carries the numbers the
 * workflow needs to size the activity around the call, so the workflow never reads config.
 */
export interface McpToolRoute {
  type: 'mcp_tool';
  integrationId?: string;
  toolName: string;
  integrationName?: string;
  /** per-request timeout; progress notifications restart it */
  toolTimeoutMs?: number;
  /** bound on the whole call, progress or not */
  totalTimeoutMs?: number;
  /** annotated read-only or idempotent by an integration whose annotations are trusted */
  retryable?: boolean;
  /** the task queue of a pinned integration: its calls run only on workers polling it */
  taskQueue?: string;
}

export const NATIVE_TOOL_NAMES = {
  resource: 'retrieve_mcp_resource',
  prompt: 'retrieve_mcp_prompt',
  sourceQuery: 'source_query',
} as const;

export interface ToolAvailability {
  /** routes of discovered MCP tools, keyed by the name the LLM sees */
  mcpRoutes: Record<string, ToolRoute>;
  integrationCount: number;
  hasDataSources: boolean;
}

/** The native tools offered in a turn (contract: ARCHITECTURE.md "Assemble tools"). */
export function nativeToolsFor(a: ToolAvailability): string[] {
  const names: string[] = [];
  if (a.integrationCount > 0) names.push(NATIVE_TOOL_NAMES.resource, NATIVE_TOOL_NAMES.prompt);
  if (a.hasDataSources || a.integrationCount > 0) names.push(NATIVE_TOOL_NAMES.sourceQuery);
  return names;
}

export type ResolvedRoute = ToolRoute | { type: 'unknown' };

export function routeToolCall(name: string, a: ToolAvailability): ResolvedRoute {
  if (Object.prototype.hasOwnProperty.call(a.mcpRoutes, name)) return a.mcpRoutes[name];
  if (!nativeToolsFor(a).includes(name)) return { type: 'unknown' };
  if (name === NATIVE_TOOL_NAMES.resource) return { type: 'mcp_resource' };
  if (name === NATIVE_TOOL_NAMES.prompt) return { type: 'mcp_prompt' };
  return { type: 'source_query' };
}
