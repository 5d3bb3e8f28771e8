import type { ActivityOptions } from '@temporalio/common';
import { z } from 'zod';
import type { ToolAvailability } from './tool-call';
import { toolResultText } from './tool-texts';

/**
 * The native tools, declared: what the LLM calls them, when a run offers them, the one schema that
 * both describes their arguments to the LLM and checks them, what the LLM reads when their
 * activity gives up, and the activity (with its options) that executes them. Pure, so that
 * workflow code builds its table of tool kinds from these alone (workflows/tool-kinds.ts).
 * A new native tool is an entry here, its execution in activities/tools/, and one line in
 * activities/tools/index.ts.
 */
export interface NativeTool<Args = Record<string, unknown>> {
  /** the name the LLM calls */
  name: string;
  /** the run object's toolCalls[].type */
  type: string;
  /** the activity that executes a call; its name is in every history: never rename it */
  activity: string;
  /** whether a turn offers it, from what the run can offer */
  offered: (tools: ToolAvailability) => boolean;
  input: z.ZodType<Args>;
  /** what the LLM reads when the call is refused or its activity gives up */
  failureText: (message: string) => string;
  /** one line for the call's activity in the Web UI, from its arguments; never a secret */
  summary: (args: Record<string, unknown>) => string;
  options: (call: { summary?: string }) => ActivityOptions;
}

/** A tool's arguments as its schema reads them. */
export type ToolArgs<T> = T extends NativeTool<infer A> ? A : never;

const readRetry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 } as const;
const withIntegrations = (t: ToolAvailability) => t.integrationCount > 0;

/** A string argument the contract requires: missing, empty or not a string reads `{field} parameter is required`. */
const required = (field: string) =>
  z.string({ error: `${field} parameter is required` }).refine((s) => s.trim() !== '', `${field} parameter is required`);
const objectOf = (what: string) => z.record(z.string(), z.unknown(), { error: `${what} must be an object of ${what === 'parameters' ? 'template variable names' : 'argument names'} to values` });

/**
 * resources/read is a read, and a CSV import replaces its table atomically, so both are safe to
 * retry. A 256 MiB CSV takes minutes to import: the activity heartbeats, so a dead worker is
 * noticed within the heartbeat timeout, not at the end of the long start-to-close bound.
 */
export const resourceTool: NativeTool<{ integrationId: string; resourceUri: string; parameters?: Record<string, unknown> }> = {
  name: 'retrieve_mcp_resource',
  type: 'mcp_resource',
  activity: 'retrieveResource',
  offered: withIntegrations,
  input: z.object({
    integrationId: required('integrationId').describe('The id or name of the integration.'),
    resourceUri: required('resourceUri').describe('The URI of the resource, or of a resource template.'),
    parameters: objectOf('parameters').optional().describe('Values for the parameters of a resource template.'),
  }),
  failureText: (message) => toolResultText.resourceFailed(message),
  summary: (args) => `resource ${String(args.resourceUri ?? '?')} from ${String(args.integrationId ?? '?')}`,
  options: (call) => ({ summary: call.summary, startToCloseTimeout: '30 minutes', heartbeatTimeout: '30s', retry: readRetry }),
};

/** prompts/get is a read: safe to retry. Its MCP request is bounded at 60 s, plus up to 30 s to connect. */
export const promptTool: NativeTool<{ integrationId: string; promptName: string; arguments?: Record<string, unknown> }> = {
  name: 'retrieve_mcp_prompt',
  type: 'mcp_prompt',
  activity: 'retrievePrompt',
  offered: withIntegrations,
  input: z.object({
    integrationId: required('integrationId').describe('The id or name of the integration.'),
    promptName: required('promptName').describe('The name of the prompt.'),
    arguments: objectOf('arguments').optional().describe('Arguments of the prompt.'),
  }),
  failureText: (message) => toolResultText.promptFailed(message),
  summary: (args) => `prompt ${String(args.promptName ?? '?')} from ${String(args.integrationId ?? '?')}`,
  options: (call) => ({ summary: call.summary, startToCloseTimeout: '3 minutes', heartbeatTimeout: '15s', retry: readRetry }),
};

/**
 * A source query is read-only, so a lost database connection is retried. Its statement (and the
 * row count after it) are each bounded by statement_timeout, at most a minute apiece by config.
 */
export const sourceQueryTool: NativeTool<{ sql: string; limit?: number }> = {
  name: 'source_query',
  type: 'source_query',
  activity: 'sourceQuery',
  offered: (t) => t.hasDataSources || withIntegrations(t),
  input: z.object({
    sql: required('sql').describe('One SELECT, VALUES, TABLE or WITH statement.'),
    limit: z.number({ error: 'limit must be a positive integer' }).int('limit must be a positive integer')
      .positive('limit must be a positive integer').optional().describe('The maximum number of rows to return.'),
  }),
  failureText: (message) => toolResultText.sourceQueryFailed(message),
  summary: (args) => `SQL: ${String(args.sql ?? '').trim().split('\n')[0]}`,
  options: (call) => ({ summary: call.summary, startToCloseTimeout: '3 minutes', heartbeatTimeout: '15s', retry: readRetry }),
};

/** Every native tool, in the order the LLM sees them. */
export const NATIVE_TOOLS: readonly NativeTool[] = [resourceTool, promptTool, sourceQueryTool] as NativeTool[];

/** The run object's toolCalls[].type: an MCP tool, each native tool, or a call to no known tool. */
export const TOOL_TYPES: string[] = ['mcp_tool', ...NATIVE_TOOLS.map((t) => t.type), 'sub_agent', 'unknown'];

/** The native tools a turn offers, by name: the workflow offers them every turn, and a run's preparation to its first turn. */
export function offeredNativeTools(tools: ToolAvailability): string[] {
  return NATIVE_TOOLS.filter((t) => t.offered(tools)).map((t) => t.name);
}

export const findNativeTool = (name: string): NativeTool | undefined => NATIVE_TOOLS.find((t) => t.name === name);

/**
 * A call's arguments checked against its tool's schema: the arguments as the schema reads them,
 * or the first complaint in the contract's words. A null argument counts as absent.
 */
export function parseToolArguments<A>(tool: NativeTool<A>, args: Record<string, unknown>): { ok: true; args: A } | { ok: false; message: string } {
  const present = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null));
  const parsed = tool.input.safeParse(present);
  return parsed.success ? { ok: true, args: parsed.data } : { ok: false, message: parsed.error.issues[0]?.message ?? 'invalid arguments' };
}

const inputSchemas = new WeakMap<NativeTool, Record<string, unknown>>();

/** The JSON Schema the LLM is given for the tool's arguments; made once per tool, since every turn offers it. */
export function toolInputSchema(tool: NativeTool): Record<string, unknown> {
  let schema = inputSchemas.get(tool);
  if (!schema) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    schema = rest;
    inputSchemas.set(tool, schema);
  }
  return schema;
}
