import { TimedOut, withinTime } from './bounded-pattern';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { callerToolNameClash, SCHEMA_CHECK_TIMEOUT_MS, type CallerTool } from '../core/caller-tools';

/*
 * JSON Schemas a caller declares (caller tools' inputSchema), compiled and used on values the model
 * produced. A schema's `pattern` (and a `format`'s regular expression) runs on text of the model's
 * choosing, and a regular expression may backtrack for ever: every compile and every check runs
 * under a V8 timeout (node:vm's watchdog interrupts the regular expression too), so a schema can
 * cost a worker or the API at most that long, never hang it.
 */

/** A compiled schema: the first problems of a value, in words, or undefined when it holds. */
export type SchemaCheck = (value: unknown) => string | undefined;

/** The formats the validator checks (ajv-formats, full mode); another would be ignored, with a warning on the console. */
const KNOWN_FORMATS = new Set([
  'date', 'time', 'date-time', 'iso-time', 'iso-date-time', 'duration', 'uri', 'uri-reference', 'uri-template', 'url', 'email',
  'hostname', 'ipv4', 'ipv6', 'regex', 'uuid', 'json-pointer', 'json-pointer-uri-fragment', 'relative-json-pointer', 'byte', 'int32',
  'int64', 'float', 'double', 'password', 'binary',
]);

/** Keywords whose values are data, not schemas: a `$ref` or `format` inside is no keyword. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example']);

/**
 * What a schema may not hold, with where: a `$ref` (or `$dynamicRef`) that points outside the
 * schema itself (nothing is ever fetched), or a format the validator does not know.
 */
export function schemaProblem(schema: unknown, path = ''): string | undefined {
  if (Array.isArray(schema)) {
    for (const [i, item] of schema.entries()) {
      const found = schemaProblem(item, `${path}/${i}`);
      if (found) return found;
    }
    return undefined;
  }
  if (schema === null || typeof schema !== 'object') return undefined;
  for (const [key, value] of Object.entries(schema)) {
    if ((key === '$ref' || key === '$dynamicRef') && typeof value === 'string' && !value.startsWith('#')) {
      return `${path}/${key} refers to ${value}: only references within the schema ("#…") are allowed`;
    }
    if (key === 'format' && typeof value === 'string' && !KNOWN_FORMATS.has(value)) {
      return `${path}/format "${value}" is not a format the engine checks (${[...KNOWN_FORMATS].join(', ')})`;
    }
    if (DATA_KEYWORDS.has(key)) continue;
    const found = schemaProblem(value, `${path}/${key}`);
    if (found) return found;
  }
  return undefined;
}

/**
 * The schema compiled, or why it cannot be: a remote reference, an unknown format, a keyword that
 * does not compile, a compile that took longer than `timeoutMs`. A fresh validator each time:
 * schemas differ per run, and an `$id` must not resolve to another caller's schema.
 */
export function compileSchema(schema: Record<string, unknown>, timeoutMs: number): { check: SchemaCheck } | { problem: string } {
  const refused = schemaProblem(schema);
  if (refused) return { problem: refused };
  let validate: ReturnType<AjvJsonSchemaValidator['getValidator']>;
  try {
    validate = withinTime(() => new AjvJsonSchemaValidator().getValidator(schema), timeoutMs);
  } catch (err) {
    if (err instanceof TimedOut) return { problem: `compiling it took longer than ${timeoutMs} ms` };
    return { problem: `it does not compile: ${(err as Error).message}` };
  }
  const check: SchemaCheck = (value) => {
    try {
      const result = withinTime(() => validate(value), timeoutMs);
      return result.valid ? undefined : (result.errorMessage ?? 'they do not match the schema');
    } catch (err) {
      if (err instanceof TimedOut) return `checking them against the schema took longer than ${timeoutMs} ms`;
      throw err;
    }
  };
  return { check };
}

/**
 * The first of these caller tools (core/caller-tools.ts) that may not be one of a run of an agent
 * with these integrations, with where (`[2].name`, `[0].inputSchema`) and why: a name that would be
 * another tool of the run, a schema that does not compile, refers outside itself or names a format
 * the engine does not check. The one check of the API's declarations and of agent files'.
 */
export function callerToolsProblem(tools: CallerTool[], integrationNames: readonly string[]): { at: string; problem: string } | undefined {
  for (const [i, tool] of tools.entries()) {
    const clash = callerToolNameClash(tool.name, integrationNames);
    if (clash) return { at: `[${i}].name`, problem: clash };
    const compiled = compileSchema(tool.inputSchema, SCHEMA_CHECK_TIMEOUT_MS);
    if ('problem' in compiled) return { at: `[${i}].inputSchema`, problem: compiled.problem };
  }
  return undefined;
}
