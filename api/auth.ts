import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { HttpProblem } from './problem';

// Hashing first gives equal-length buffers, so timingSafeEqual leaks neither the key nor its length.
const digest = (value: string) => createHash('sha256').update(value).digest();

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const [scheme, token, ...rest] = header.trim().split(/\s+/);
  return scheme.toLowerCase() === 'bearer' && token && rest.length === 0 ? token : undefined;
}

/** Whether the request carries the API key, compared in constant time. */
export function hasApiKey(apiKey: string): (request: FastifyRequest) => boolean {
  const expected = digest(apiKey);
  return (request) => {
    const token = bearerToken(request);
    return token !== undefined && timingSafeEqual(digest(token), expected);
  };
}

/** An onRequest hook that admits only `Authorization: Bearer <apiKey>`. */
export function requireApiKey(apiKey: string): onRequestAsyncHookHandler {
  const valid = hasApiKey(apiKey);
  return async (request, reply) => {
    if (valid(request)) return;
    reply.header('www-authenticate', 'Bearer');
    throw new HttpProblem(401, 'A valid API key is required: send "Authorization: Bearer <key>"', 'unauthorized');
  };
}
