import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { z } from 'zod';
import { fieldIssues, formatPath } from '../use-cases/validation';

/**
 * Requests are checked by the zod schema of each route part. A failure is a 400 with code
 * `validation` (api/problem.ts): its detail has one line per complaint, paths written as
 * `body.transport.url`, and its `field` names the first field at fault.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => (data) => {
  const parsed = schema.safeParse(data);
  if (parsed.success) return { value: parsed.data };
  const issues = fieldIssues(parsed.error.issues, [httpPart ?? 'body']);
  const error = Object.assign(new Error(issues.map((i) => i.line).join('; ')), { validation: parsed.error.issues, field: issues[0]?.field });
  return { error };
};


/** Where an Ajv error points, as the zod messages write it (`body.transport.url`, `body.script[0]`). */
function schemaErrorPath(error: FastifySchemaValidationError, dataVar: string): PropertyKey[] {
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  return [dataVar, ...segments.map((s) => (/^\d+$/.test(s) ? Number(s) : s))];
}

/**
 * Fastify's validation messages with the path written as elsewhere, plus the name of an unexpected
 * property, which Ajv's message leaves out. The error's `field` names the first offending field.
 */
export function formatSchemaErrors(errors: FastifySchemaValidationError[], dataVar: string): Error & { field?: string } {
  const lines = errors.map((e) => {
    const property = e.keyword === 'additionalProperties' ? `: ${JSON.stringify(e.params.additionalProperty)}` : '';
    return `${formatPath(schemaErrorPath(e, dataVar))} ${e.message ?? 'is invalid'}${property}`;
  });
  const first = errors[0];
  const named = first && (first.params.additionalProperty ?? first.params.missingProperty);
  const field = first && formatPath([...schemaErrorPath(first, dataVar), ...(typeof named === 'string' ? [named] : [])]);
  return Object.assign(new Error(lines.join('; ')), field ? { field } : {});
}
