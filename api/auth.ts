import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { everyCallerIsOperator } from '../platform/config';
import type { Caller } from '../use-cases/caller';
import { HttpProblem } from './problem';

// Hashing first gives equal-length buffers, so timingSafeEqual leaks neither the key nor its length.
const digest = (value: string) => createHash('sha256').update(value).digest();

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const [scheme, token, ...rest] = header.trim().split(/\s+/);
  return scheme.toLowerCase() === 'bearer' && token && rest.length === 0 ? token : undefined;
}

/** Whether the request carries one of the keys, compared in constant time. */
export function hasApiKey(...keys: (string | undefined)[]): (request: FastifyRequest) => boolean {
  const expected = keys.filter((k): k is string => Boolean(k)).map(digest);
  return (request) => {
    const token = bearerToken(request);
    if (token === undefined) return false;
    const given = digest(token);
    // Every key is compared, so the time taken does not tell which one matched.
    return expected.map((e) => timingSafeEqual(given, e)).includes(true);
  };
}

/** An onRequest hook that admits only `Authorization: Bearer <key>` with one of the keys. */
export function requireApiKey(...keys: (string | undefined)[]): onRequestAsyncHookHandler {
  const valid = hasApiKey(...keys);
  return async (request, reply) => {
    if (valid(request)) return;
    reply.header('www-authenticate', 'Bearer');
    throw new HttpProblem(401, 'A valid API key is required: send "Authorization: Bearer <key>"', 'unauthorized');
  };
}

/**
 * Who may decide what a worker executes or where a stored secret goes (a stdio integration, a
 * changed command or URL, `${VAR}` expansion, an agent's baseUrl or apiKeyEnv): the holder of
 * ADMIN_API_KEY. Without one, everybody on a loopback-only API (local development), nobody otherwise.
 */
export interface AdminPolicy {
  /** The request's sender as use cases see it: whether it is the operator, and how a request would be. */
  caller(request: FastifyRequest): Caller;
}

export function createAdminPolicy(opts: { adminApiKey?: string; listenHost: string }): AdminPolicy {
  const holdsAdminKey = opts.adminApiKey ? hasApiKey(opts.adminApiKey) : undefined;
  const openToAll = everyCallerIsOperator({ adminApiKey: opts.adminApiKey, host: opts.listenHost });
  const operatorHint = holdsAdminKey
    ? 'send the admin key ("Authorization: Bearer <ADMIN_API_KEY>")'
    : 'this API listens on a non-loopback address and has no ADMIN_API_KEY, so nobody may do it through the API';
  return { caller: (request) => ({ isOperator: openToAll || (holdsAdminKey?.(request) ?? false), operatorHint }) };
}
