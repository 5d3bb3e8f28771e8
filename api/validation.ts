import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { fieldIssues } from '../use-cases/validation';

/**
 * Requests are checked by the zod schema of each route part. A failure is a 400 with code
 * `validation` (api/problem.ts): its detail has one line per complaint, paths written as
 * `body.transport.url`, and its `field` names the first field at fault.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => (data) => {
  const parsed = schema.safeParse(data);
  if (parsed.success) return { value: parsed.data };
  const issues = fieldIssues(parsed.error.issues, [httpPart ?? 'body']);
  const error = Object.assign(new Error(issues.map((i) => i.line).join('; ')), {
    validation: parsed.error.issues, field: issues[0]?.field,
  });
  return { error };
};
