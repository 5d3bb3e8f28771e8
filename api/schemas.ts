import { z } from 'zod';
import { PROBLEM_CONTENT_TYPE } from './problem';

/**
 * The zod schemas every part of the HTTP contract shares. Each shape is written once: routes
 * check requests and write responses with it (api/app.ts sets the compilers), handlers get its
 * inferred types, and /docs is written from it (shapes with `.meta({ id })` are named components).
 *
 * Request objects are strict: a misspelt `maxturns` is a 400, not silently dropped. Response
 * objects keep only their declared properties, so nothing undeclared (a secret) leaves by mistake.
 */

export const id = z.string().min(1).max(128);
/** A time the engine wrote (ISO 8601); responses only, so it is documented rather than checked. */
export const timestamp = z.string().meta({ format: 'date-time' });
export const idParams = z.strictObject({ id });

/** A whole number in a query string, where every value arrives as text. */
export const queryInteger = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** `true` or `false` in a query string. */
export const queryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');

export const problemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.int(),
  detail: z.string(),
  code: z.string().optional().describe('machine-readable cause, e.g. thread_busy, conflict, validation'),
  checks: z.record(z.string(), z.string()).optional(),
  featuresOff: z.array(z.string()).optional().describe('with code not_ready: what is off until the operator configures it'),
  field: z.string().optional()
    .describe('with code admin_required: the field only the operator may set; with validation: the field at fault'),
  role: z.string().optional().describe('with code forbidden: the role the request needs'),
  approvalStatus: z.string().optional().describe('with code already_decided: approved, denied, timed_out or cancelled'),
  decision: z.string().nullable().optional()
    .describe('with code already_decided: the earlier decision (approve or deny), null when none was made'),
  authorization: z.string().optional().describe('with code authorization_required: required or expired'),
}).meta({ id: 'Problem', description: 'RFC 9457 problem details' });

/** A problem response, documented with its real media type. */
export const problemResponse = (description: string) => ({
  description,
  content: { [PROBLEM_CONTENT_TYPE]: { schema: problemSchema } },
});

/** A JSON response with a description of its own, for a named shape (whose component cannot carry it). */
export const jsonResponse = <T extends z.ZodType>(description: string, schema: T) => ({
  description,
  content: { 'application/json': { schema } },
});
