import { z } from 'zod';
import { DURATION_PATTERN, parseDuration } from './duration';
import {
  CALLER_TOOL_NAME_PATTERN, MAX_CALLER_TOOL_DESCRIPTION_CHARS, MAX_CALLER_TOOL_SCHEMA_BYTES, MAX_CALLER_TOOL_TIMEOUT_MS, MAX_CALLER_TOOLS,
} from './caller-tools';

/**
 * Caller tools as a request declares them (a run start, an agent): the shape and sizes. Whether
 * each schema compiles, refers to nothing remote, and whether a name would be another tool of the
 * run are the use cases' checks (use-cases/runs/caller-tool-declarations.ts). Not for workflow code: zod.
 */

const inputSchema = z.record(z.string(), z.unknown())
  .refine((schema) => Buffer.byteLength(JSON.stringify(schema)) <= MAX_CALLER_TOOL_SCHEMA_BYTES,
    `must be at most ${MAX_CALLER_TOOL_SCHEMA_BYTES} bytes as JSON`)
  .refine((schema) => schema.type === 'object', 'must be an object schema (type "object")')
  .meta({ description: `a JSON Schema of the arguments (type "object"), at most ${MAX_CALLER_TOOL_SCHEMA_BYTES} bytes as JSON; `
    + 'no remote $ref; the model\'s arguments are checked against it before they reach the caller' });

export const callerToolSchema = z.strictObject({
  name: z.string().regex(CALLER_TOOL_NAME_PATTERN, 'must be 1 to 64 letters, digits, "_" or "-"')
    .describe('the name the LLM calls it by; not a name of another tool of the run (an integration\'s <integration>__<tool>, '
      + 'a native tool, a sub-agent\'s agent__<name>)'),
  description: z.string().max(MAX_CALLER_TOOL_DESCRIPTION_CHARS).optional().describe('what the LLM reads about the tool'),
  inputSchema,
}).meta({ id: 'CallerTool' });

export const callerToolsSchema = z.array(callerToolSchema).max(MAX_CALLER_TOOLS)
  .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'must not declare a name twice')
  .describe(`tools the caller runs itself (at most ${MAX_CALLER_TOOLS}): the LLM calls each by its name, and the run waits for `
    + 'the caller\'s answer (POST /v1/runs/{id}/tool-results/{toolCallId}); see pendingCallerTools');

function isCallerToolTimeout(text: string): boolean {
  const ms = parseDuration(text);
  return ms !== undefined && ms >= 1000 && ms <= MAX_CALLER_TOOL_TIMEOUT_MS;
}

export const callerToolTimeoutSchema = z.string().max(32).regex(new RegExp(DURATION_PATTERN))
  .refine(isCallerToolTimeout, 'must be a duration from 1s to 24h')
  .describe('how long a caller tool\'s call waits for its answer (default "10m", at most "24h"); the LLM is then told it was not answered');

export type CallerToolDeclaration = z.infer<typeof callerToolSchema>;
