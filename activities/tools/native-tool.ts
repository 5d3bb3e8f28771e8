import { z } from 'zod';
import type { NativeToolKind } from '../../core/native-tool-kinds';

/**
 * A native tool as its execution knows it: its kind (core/native-tool-kinds.ts: its name, when a
 * run offers it, its activity, what the LLM reads when it fails) with the one schema that both
 * describes its arguments to the LLM and checks them. The schema lives beside the execution, never
 * in core/: workflow code reads the kinds alone, and its bundle holds no zod.
 */
export interface NativeTool<Args = Record<string, unknown>> extends NativeToolKind {
  input: z.ZodType<Args>;
}

/** A tool's arguments as its schema reads them. */
export type ToolArgs<T> = T extends NativeTool<infer A> ? A : never;

/** A string argument the contract requires: missing, empty or not a string reads `{field} parameter is required`. */
export const requiredString = (field: string) =>
  z.string({ error: `${field} parameter is required` }).refine((s) => s.trim() !== '', `${field} parameter is required`);

/** An object argument of names to values, and the contract's text when it is something else. */
export const objectOf = (what: string, names: string) =>
  z.record(z.string(), z.unknown(), { error: `${what} must be an object of ${names} to values` });

/**
 * A call's arguments checked against its tool's schema: the arguments as the schema reads them,
 * or the first complaint in the contract's words. A null argument counts as absent.
 */
export function parseToolArguments<A>(
  tool: NativeTool<A>, args: Record<string, unknown>,
): { ok: true; args: A } | { ok: false; message: string } {
  const present = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null));
  const parsed = tool.input.safeParse(present);
  if (parsed.success) return { ok: true, args: parsed.data };
  return { ok: false, message: parsed.error.issues[0]?.message ?? 'invalid arguments' };
}

const inputSchemas = new WeakMap<NativeTool, Record<string, unknown>>();

/** The JSON Schema the LLM is given for the tool's arguments; made once per tool, since every turn offers it. */
export function toolInputSchema(tool: NativeTool): Record<string, unknown> {
  let schema = inputSchemas.get(tool);
  if (!schema) {
    const jsonSchema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    const { $schema: _dialect, ...rest } = jsonSchema;
    schema = rest;
    inputSchemas.set(tool, schema);
  }
  return schema;
}
