import type { ActivityOptions } from '@temporalio/common';
import { NATIVE_TOOL_NAMES, offeredNativeTools, type McpToolRoute, type ToolAvailability } from '../core/tool-call';
import { toolResultText } from '../core/tool-texts';

/**
 * Every kind of tool call the workflow can dispatch, in one table: which activity serves it with
 * which options, and what the LLM reads when that activity gives up (when a native tool is
 * offered is core/tool-call.ts's offeredNativeTools, which preparation uses too).
 * A new native tool is one entry here, one handler file in activities/tools/ and one registration
 * line in activities/tools/index.ts. Pure: the run workflow reads it, the API derives its enums from it.
 */
interface ToolKind {
  /** the native tool's name; MCP tools are found through the run's tool-name map instead */
  nativeName?: string;
  /** the activity that serves the call; without one, the workflow answers with the failure text */
  activity?: 'callMcpTool' | 'retrieveResource' | 'retrievePrompt' | 'sourceQuery';
  options?: (call: { turn: number; index: number; name: string; summary?: string }, route?: McpToolRoute) => ActivityOptions;
  failureText: (message: string, name: string) => string;
}

const readRetry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 } as const;
/** Room above the MCP request's own bound for connecting (with its in-activity retries) and storing the result. */
const MCP_ACTIVITY_MARGIN_MS = 90_000;

export const toolKinds = {
  /**
   * An MCP tool's activity follows its integration's timeout, so the MCP request always gives up
   * before Temporal does and the LLM gets the contract timeout text. A tool may have side effects,
   * so it runs once unless its server is trusted to say it is safe to repeat.
   */
  mcp_tool: {
    activity: 'callMcpTool',
    options: (call, route) => ({
      activityId: `mcp:${call.turn}:${call.index}:${call.name}`,
      ...(route?.taskQueue ? { taskQueue: route.taskQueue } : {}),
      summary: `MCP tool ${route?.toolName} on ${route?.integrationName}`,
      startToCloseTimeout: (route?.totalTimeoutMs ?? 0) + (route?.elicitationTimeoutMs ?? 0) + MCP_ACTIVITY_MARGIN_MS,
      heartbeatTimeout: '10s',
      retry: route?.retryable ? { ...readRetry, maximumAttempts: 3 } : { maximumAttempts: 1 },
    }),
    failureText: (message) => toolResultText.mcpToolUnexpected(message),
  },
  /**
   * resources/read is a read, and a CSV import replaces its table atomically, so both are safe to
   * retry. A 256 MiB CSV takes minutes to import: the activity heartbeats, so a dead worker is
   * noticed within the heartbeat timeout, not at the end of the long start-to-close bound.
   */
  mcp_resource: {
    nativeName: NATIVE_TOOL_NAMES.resource,
    activity: 'retrieveResource',
    options: (call) => ({ summary: call.summary, startToCloseTimeout: '30 minutes', heartbeatTimeout: '30s', retry: readRetry }),
    failureText: (message) => toolResultText.resourceFailed(message),
  },
  /** prompts/get is a read: safe to retry. Its MCP request is bounded at 60 s, plus up to 30 s to connect. */
  mcp_prompt: {
    nativeName: NATIVE_TOOL_NAMES.prompt,
    activity: 'retrievePrompt',
    options: (call) => ({ summary: call.summary, startToCloseTimeout: '3 minutes', heartbeatTimeout: '15s', retry: readRetry }),
    failureText: (message) => toolResultText.promptFailed(message),
  },
  /**
   * A source query is read-only, so a lost database connection is retried. Its statement (and the
   * row count after it) are each bounded by statement_timeout, at most a minute apiece by config.
   */
  source_query: {
    nativeName: NATIVE_TOOL_NAMES.sourceQuery,
    activity: 'sourceQuery',
    options: (call) => ({ summary: call.summary, startToCloseTimeout: '3 minutes', heartbeatTimeout: '15s', retry: readRetry }),
    failureText: (message) => toolResultText.sourceQueryFailed(message),
  },
  unknown: {
    failureText: (_message, name) => toolResultText.unknownTool(name),
  },
} as const satisfies Record<string, ToolKind>;

export type ToolType = keyof typeof toolKinds;
/** The run object's `type` enum. */
export const TOOL_TYPES = Object.keys(toolKinds) as ToolType[];

type Entry = [ToolType, ToolKind];
const nativeKinds = (Object.entries(toolKinds) as Entry[]).filter(([, kind]) => kind.nativeName);

export interface RoutedCall {
  type: ToolType;
  kind: ToolKind;
  route?: McpToolRoute;
}

/** Where a call goes: the tool-name map first, then the native tools this run offers, else unknown. */
export function routeToolCall(name: string, tools: ToolAvailability): RoutedCall {
  if (Object.prototype.hasOwnProperty.call(tools.mcpRoutes, name)) {
    return { type: 'mcp_tool', kind: toolKinds.mcp_tool, route: tools.mcpRoutes[name] };
  }
  const native = offeredNativeTools(tools).includes(name) ? nativeKinds.find(([, kind]) => kind.nativeName === name) : undefined;
  if (native) return { type: native[0], kind: native[1] };
  // A tool of a server whose tools could not be listed for want of authorization: say so, not "not found".
  const locked = tools.unauthorized?.find((u) => name.startsWith(u.prefix));
  if (locked) return { type: 'mcp_tool', kind: { failureText: () => toolResultText.mcpToolFailed(toolResultText.needsAuthorization(locked.integrationName)) } };
  return { type: 'unknown', kind: toolKinds.unknown };
}
