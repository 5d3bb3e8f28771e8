import type { RateLimitPluginOptions } from '@fastify/rate-limit';
import { hasApiKey } from './auth';

/**
 * `perMinute` requests a minute per budget. Holders of the API key share one budget, and the
 * operator has one of its own, so that a user's flood cannot lock the operator out; anyone else is
 * counted by address, so that inventing Authorization headers cannot buy a fresh budget. (With an
 * API key set, requests without it are refused by the /v1 auth hook, which runs first and does no
 * other work.)
 */
export function rateLimitOptions(perMinute: number, keys: { apiKey?: string; adminApiKey?: string }): RateLimitPluginOptions {
  const holdsAdminKey = keys.adminApiKey ? hasApiKey(keys.adminApiKey) : undefined;
  const holdsApiKey = keys.apiKey ? hasApiKey(keys.apiKey) : undefined;
  return {
    max: perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => {
      if (holdsAdminKey?.(request)) return 'admin-key';
      return holdsApiKey?.(request) ? 'api-key' : `ip:${request.ip}`;
    },
    // Becomes a 429 problem+json through the shared error handler; the plugin adds Retry-After.
    errorResponseBuilder: (_request, context) => Object.assign(
      new Error(`Rate limit exceeded: ${context.max} requests per minute; retry after ${Math.ceil(context.ttl / 1000)} s`),
      { statusCode: 429, code: 'rate_limited' },
    ),
  };
}
