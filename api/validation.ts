import type { FastifySchemaValidationError } from 'fastify';
import type { z } from 'zod';
import { modelSchema, type ModelConfig } from '../core/agent-model';
import { HttpProblem } from './problem';

type Issue = z.core.$ZodIssue;

export const formatPath = (path: readonly PropertyKey[]) =>
  path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');

export function describeIssues(issues: readonly Issue[], base: readonly PropertyKey[]): string[] {
  return issues.flatMap((issue) => {
    const path = [...base, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // A bare "Invalid input" does not help; the branch with the fewest complaints is the one the caller meant.
      const closest = issue.errors.reduce((best, branch) => (branch.length < best.length ? branch : best));
      return describeIssues(closest, path);
    }
    return [`${formatPath(path)}: ${issue.message}`];
  });
}

/** Parses an agent's `model`, answering a 400 that names each offending field. */
export function parseModel(value: unknown): ModelConfig {
  const parsed = modelSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new HttpProblem(400, `Invalid model: ${describeIssues(parsed.error.issues, ['body', 'model']).join('; ')}`, 'validation');
}

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
