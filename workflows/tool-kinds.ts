import type { ActivityOptions } from '@temporalio/common';
import { NATIVE_TOOL_KINDS, offeredNativeTools } from '../core/native-tool-kinds';
import type { McpToolRoute, ToolAvailability } from '../core/tool-call';
import { toolResultText } from '../core/tool-texts';
import { subAgentText, type SubAgentRoute } from '../core/sub-agents';
import { callerToolText } from '../core/caller-tools';

/**
 * Every kind of tool call the workflow can dispatch, in one table: which activity serves it with
 * which options, and what the LLM reads when that activity gives up. The native tools' kinds come
 * from their declarations (core/native-tool-kinds.ts), which say when each is offered too. Pure: the
 * run workflow reads it, the API derives its enums from it.
 */
interface ToolKind {
  /** the native tool's name; MCP tools are found through the run's tool-name map instead */
  nativeName?: string;
  /** the activity that serves the call; without one, the workflow answers with the failure text */
  activity?: string;
  options?: (call: { turn: number; index: number; name: string; summary?: string }, route?: McpToolRoute) => ActivityOptions;
  failureText: (message: string, name: string) => string;
  /** what the LLM reads when the call never ran (it waited too long for its turn); failureText when absent */
  notRunText?: (message: string) => string;
}

const readRetry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 } as const;
/** Room above the MCP request's own bound for connecting (with its in-activity retries) and storing the result. */
const MCP_ACTIVITY_MARGIN_MS = 90_000;

const fixedKinds = {
  /**
   * An MCP tool's activity follows its integration's timeout, so the MCP request always gives up
   * before Temporal does and the LLM gets the contract timeout text. A tool may have side effects,
   * so it runs once unless its server is trusted to say it is safe to repeat, or the operator says
   * the server deduplicates calls by their idempotency key (the same on every attempt).
   */
  mcp_tool: {
    activity: 'callMcpTool',
    options: (call, route) => ({
      activityId: `mcp:${call.turn}:${call.index}:${call.name}`,
      ...(route?.taskQueue ? { taskQueue: route.taskQueue } : {}),
      summary: `MCP tool ${route?.toolName} on ${route?.integrationName}`,
      startToCloseTimeout: (route?.totalTimeoutMs ?? 0) + (route?.elicitationTimeoutMs ?? 0) + MCP_ACTIVITY_MARGIN_MS,
      heartbeatTimeout: '10s',
      retry: route?.retryable ? readRetry : { maximumAttempts: 1 },
    }),
    failureText: (message) => toolResultText.mcpToolUnexpected(message),
    notRunText: (message) => toolResultText.mcpToolFailed(message),
  },
  /** A sub-agent's call: the activity records the child run (idempotent), the workflow runs it (workflows/sub-agent.ts). */
  sub_agent: {
    activity: 'startSubAgent',
    options: (call) => ({
      activityId: `agent:${call.turn}:${call.index}`, summary: `sub-agent ${call.name}`,
      startToCloseTimeout: '1 minute', heartbeatTimeout: '10s', retry: readRetry,
    }),
    failureText: (message, name) => subAgentText.failed(name, message),
  },
  /**
   * A caller tool's call: the activity checks the arguments and stores the call (idempotent); the
   * workflow then waits for the caller's answer with no activity running (workflows/caller-tool-wait.ts).
   */
  caller_tool: {
    activity: 'askCallerTool',
    options: (call) => ({
      activityId: `caller:${call.turn}:${call.index}`, summary: `caller tool ${call.name}`,
      startToCloseTimeout: '1 minute', heartbeatTimeout: '10s', retry: readRetry,
    }),
    failureText: (message, name) => callerToolText.failed(name, message),
  },
  unknown: {
    failureText: (_message, name) => toolResultText.unknownTool(name),
  },
} as const satisfies Record<string, ToolKind>;

const nativeKinds: [string, ToolKind][] = NATIVE_TOOL_KINDS.map((t) => [t.type, {
  nativeName: t.name, activity: t.activity, options: (call) => t.options(call), failureText: (message) => t.failureText(message),
}]);

export const toolKinds: Record<string, ToolKind> = { ...fixedKinds, ...Object.fromEntries(nativeKinds) };

export type ToolType = string;

export interface RoutedCall {
  type: ToolType;
  kind: ToolKind;
  route?: McpToolRoute;
  subAgent?: SubAgentRoute;
}

/** Where a call goes: the tool-name map first, then the sub-agents, the native tools this run offers, its caller's tools, else unknown. */
export function routeToolCall(name: string, tools: ToolAvailability): RoutedCall {
  if (Object.prototype.hasOwnProperty.call(tools.mcpRoutes, name)) {
    return { type: 'mcp_tool', kind: fixedKinds.mcp_tool, route: tools.mcpRoutes[name] };
  }
  if (tools.subAgents && Object.prototype.hasOwnProperty.call(tools.subAgents, name)) {
    return { type: 'sub_agent', kind: fixedKinds.sub_agent, subAgent: tools.subAgents[name] };
  }
  const native = offeredNativeTools(tools).includes(name) ? nativeKinds.find(([, kind]) => kind.nativeName === name) : undefined;
  if (native) return { type: native[0], kind: native[1] };
  if (tools.callerTools?.includes(name)) return { type: 'caller_tool', kind: fixedKinds.caller_tool };
  // A tool of a server whose tools could not be listed for want of authorization: say so, not "not found".
  const locked = tools.unauthorized?.find((u) => name.startsWith(u.prefix));
  if (locked) {
    const text = toolResultText.mcpToolFailed(toolResultText.needsAuthorization(locked.integrationName));
    return { type: 'mcp_tool', kind: { failureText: () => text } };
  }
  return { type: 'unknown', kind: fixedKinds.unknown };
}
