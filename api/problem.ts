import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isUnreachableDb } from '../store/pool';
import { isUnreachableTemporal } from '../platform/temporal/unreachable';
import { EngineError, type EngineErrorCode } from '../core/engine-error';
import { SecretsKeyMissingError } from '../platform/secrets/secret-box';

/** RFC 9457 problem details. `code` tells apart problems that share a status (a busy thread vs a key reuse). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code?: string;
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** A refusal of the API's own, before any use case: a missing key, a foreign Host, a file the console lacks. */
export class HttpProblem extends Error {
  override name = 'HttpProblem';
  constructor(readonly status: number, detail: string, readonly code?: string) {
    super(detail);
  }
}

/** The status of each code use cases throw; the problem carries the code, the message and the details as they are. */
const STATUS_OF: Record<EngineErrorCode, number> = {
  validation: 400, invalid: 400, not_authorizable: 400, unset_variable: 400,
  admin_required: 403, forbidden: 403,
  not_found: 404,
  conflict: 409, thread_busy: 409, agent_disabled: 409, agent_busy: 409, agent_in_use: 409, defined_by_file: 409,
  sub_agent_cycle: 409, in_use: 409, already_decided: 409, input_closed: 409, authorization_required: 409,
  unreachable: 502, authorization_failed: 502, preview_failed: 502,
  too_many_runs: 429,
  unavailable: 503, search_attributes_missing: 503,
  timeout: 504,
};

export function problem(status: number, detail: string, code?: string, extensions: Record<string, unknown> = {}): Problem {
  return { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail, ...(code ? { code } : {}), ...extensions };
}

export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** Maps any error to a problem; only 4xx keep their message, because 5xx messages may carry internals. */
export function toProblem(err: unknown): Problem {
  if (err instanceof EngineError) return problem(STATUS_OF[err.code], err.message, err.code, err.details);
  if (err instanceof HttpProblem) return problem(err.status, err.message, err.code);
  const fastifyError = err as Partial<FastifyError> | undefined;
  const message = fastifyError?.message ?? '';
  if (fastifyError?.validation) {
    const field = (err as { field?: unknown }).field;
    return problem(400, message, 'validation', typeof field === 'string' ? { field } : {});
  }
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return problem(status, message, fastifyError?.code);
  if (isUnreachableDb(err)) return problem(503, 'The database is unreachable; try again shortly', 'unavailable');
  if (isUnreachableTemporal(err)) return problem(503, 'Temporal is unreachable; try again shortly', 'unavailable');
  if (err instanceof SecretsKeyMissingError) {
    return problem(503, 'SECRETS_KEY is not set on this API, so it cannot store secrets (env and header values, OAuth client secrets): '
      + 'the operator sets SECRETS_KEY (32 bytes, base64) and restarts it', 'secrets_key_missing');
  }
  return problem(500, 'Internal Server Error');
}

export function routeNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(reply, problem(404, `Route ${request.method} ${request.url.split('?')[0]} not found`));
}

const OUTAGE_RETRY_AFTER_S = 5;

/** One owner of the error format, for every route and for unknown routes. */
export const problemHandlers = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((err, request, reply) => {
    const body = toProblem(err);
    if (body.status >= 500) request.log.error({ err }, 'request failed');
    // An outage passes: a client should come back rather than give up. A missing key does not pass by itself.
    if (body.code === 'unavailable') reply.header('Retry-After', String(OUTAGE_RETRY_AFTER_S));
    return sendProblem(reply, body);
  });
  app.setNotFoundHandler(routeNotFound);
}, { name: 'problem-handlers' });
