import type { ActivityOptions, Duration } from '@temporalio/common';
import type { ToolAvailability } from './tool-call';
import { toolResultText } from './tool-texts';

/**
 * The native tools as workflow code knows them: what the LLM calls them, when a run offers them,
 * what the LLM reads when their activity gives up, and the activity (with its options) that
 * executes them. No schemas: the workflow bundle stays free of zod, whose modules every workflow
 * would otherwise evaluate when it starts (each tool's execution in activities/tools/ holds its
 * argument schema). A new native tool is its kind here (in NATIVE_TOOL_KINDS), its execution in
 * activities/tools/, and one line in activities/tools/index.ts, which the compiler asks for.
 */
export interface NativeToolKind {
  /** the name the LLM calls */
  name: string;
  /** the run object's toolCalls[].type */
  type: string;
  /** the activity that executes a call; its name is in every history: never rename it */
  activity: string;
  /** whether a turn offers it, from what the run can offer */
  offered: (tools: ToolAvailability) => boolean;
  /** what the LLM reads when the call is refused or its activity gives up */
  failureText: (message: string) => string;
  /** one line for the call's activity in the Web UI, from its arguments; never a secret */
  summary: (args: Record<string, unknown>) => string;
  options: (call: { summary?: string }) => ActivityOptions;
}

const readRetry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 } as const;
const withIntegrations = (t: ToolAvailability) => t.integrationCount > 0;
/** A read's options: retried, heartbeating, within its bound. */
const readOptions = (startToCloseTimeout: Duration, heartbeatTimeout: Duration) => (call: { summary?: string }): ActivityOptions => ({
  summary: call.summary, startToCloseTimeout, heartbeatTimeout, retry: readRetry,
});

/**
 * resources/read is a read, and a CSV import replaces its table atomically, so both are safe to
 * retry. A 256 MiB CSV takes minutes to import: the activity heartbeats, so a dead worker is
 * noticed within the heartbeat timeout, not at the end of the long start-to-close bound.
 */
export const resourceKind = {
  name: 'retrieve_mcp_resource',
  type: 'mcp_resource',
  activity: 'retrieveResource',
  offered: withIntegrations,
  failureText: (message) => toolResultText.resourceFailed(message),
  summary: (args) => `resource ${String(args.resourceUri ?? '?')} from ${String(args.integrationId ?? '?')}`,
  options: readOptions('30 minutes', '30s'),
} as const satisfies NativeToolKind;

/** prompts/get is a read: safe to retry. Its MCP request is bounded at 60 s, plus up to 30 s to connect. */
export const promptKind = {
  name: 'retrieve_mcp_prompt',
  type: 'mcp_prompt',
  activity: 'retrievePrompt',
  offered: withIntegrations,
  failureText: (message) => toolResultText.promptFailed(message),
  summary: (args) => `prompt ${String(args.promptName ?? '?')} from ${String(args.integrationId ?? '?')}`,
  options: readOptions('3 minutes', '15s'),
} as const satisfies NativeToolKind;

/**
 * A source query is read-only, so a lost database connection is retried. Its statement (and the
 * row count after it) are each bounded by statement_timeout, at most a minute apiece by config.
 */
export const sourceQueryKind = {
  name: 'source_query',
  type: 'source_query',
  activity: 'sourceQuery',
  offered: (t) => t.hasDataSources || withIntegrations(t),
  failureText: (message) => toolResultText.sourceQueryFailed(message),
  summary: (args) => `SQL: ${String(args.sql ?? '').trim().split('\n')[0]}`,
  options: readOptions('3 minutes', '15s'),
} as const satisfies NativeToolKind;

/** Every native tool, in the order the LLM sees them: the one list of them. */
export const NATIVE_TOOL_KINDS = [resourceKind, promptKind, sourceQueryKind] as const satisfies readonly NativeToolKind[];

/** The activities that execute native tools: activities/tools/index.ts registers an execution for each. */
export type NativeToolActivity = (typeof NATIVE_TOOL_KINDS)[number]['activity'];

/** The run object's toolCalls[].type: an MCP tool, each native tool, a sub-agent, a caller's tool, or a call to no known tool. */
export const TOOL_TYPES: string[] = ['mcp_tool', ...NATIVE_TOOL_KINDS.map((t) => t.type), 'sub_agent', 'caller_tool', 'unknown'];

/** The native tool the LLM calls by this name, if there is one. */
export const nativeToolKind = (name: string): NativeToolKind | undefined => NATIVE_TOOL_KINDS.find((t) => t.name === name);

/**
 * The native tools a turn offers, by name: the workflow offers them every turn, and a run's
 * preparation to its first turn.
 */
export function offeredNativeTools(tools: ToolAvailability): string[] {
  return NATIVE_TOOL_KINDS.filter((t) => t.offered(tools)).map((t) => t.name);
}
