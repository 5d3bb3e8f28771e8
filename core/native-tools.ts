import { z } from 'zod';
import { promptKind, resourceKind, sourceQueryKind, type NativeToolKind } from './native-tool-kinds';

/**
 * The native tools, declared: each one's kind (core/native-tool-kinds.ts: its name, when a run
 * offers it, its activity, what the LLM reads when it fails) with the one schema that both
 * describes its arguments to the LLM and checks them. Workflow code reads the kinds alone.
 */
export interface NativeTool<Args = Record<string, unknown>> extends NativeToolKind {
  input: z.ZodType<Args>;
}

/** A tool's arguments as its schema reads them. */
export type ToolArgs<T> = T extends NativeTool<infer A> ? A : never;

/** A string argument the contract requires: missing, empty or not a string reads `{field} parameter is required`. */
const required = (field: string) =>
  z.string({ error: `${field} parameter is required` }).refine((s) => s.trim() !== '', `${field} parameter is required`);
const objectOf = (what: string) => z.record(z.string(), z.unknown(), { error: `${what} must be an object of ${what === 'parameters' ? 'template variable names' : 'argument names'} to values` });

export const resourceTool: NativeTool<{ integrationId: string; resourceUri: string; parameters?: Record<string, unknown> }> = {
  ...resourceKind,
  input: z.object({
    integrationId: required('integrationId').describe('The id or name of the integration.'),
    resourceUri: required('resourceUri').describe('The URI of the resource, or of a resource template.'),
    parameters: objectOf('parameters').optional().describe('Values for the parameters of a resource template.'),
  }),
};

export const promptTool: NativeTool<{ integrationId: string; promptName: string; arguments?: Record<string, unknown> }> = {
  ...promptKind,
  input: z.object({
    integrationId: required('integrationId').describe('The id or name of the integration.'),
    promptName: required('promptName').describe('The name of the prompt.'),
    arguments: objectOf('arguments').optional().describe('Arguments of the prompt.'),
  }),
};

export const sourceQueryTool: NativeTool<{ sql: string; limit?: number }> = {
  ...sourceQueryKind,
  input: z.object({
    sql: required('sql').describe('One SELECT, VALUES, TABLE or WITH statement.'),
    limit: z.number({ error: 'limit must be a positive integer' }).int('limit must be a positive integer')
      .positive('limit must be a positive integer').optional().describe('The maximum number of rows to return.'),
  }),
};

/** Every native tool, in the order the LLM sees them. */
export const NATIVE_TOOLS: readonly NativeTool[] = [resourceTool, promptTool, sourceQueryTool] as NativeTool[];

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
