import type { RateLimitPluginOptions } from '@fastify/rate-limit';

/**
 * `perMinute` requests a minute per budget: one per principal (api/principals.ts: the holder of
 * API_KEY, the operator, each issued key), so that one caller's flood cannot lock out another or
 * the operator; anyone else (the console's files, the OAuth callback) is counted by address. It
 * runs after authentication (a preHandler), so invented credentials are refused before they count.
 */
export function rateLimitOptions(perMinute: number): RateLimitPluginOptions {
  return {
    max: perMinute,
    timeWindow: 60_000,
    hook: 'preHandler',
    keyGenerator: (request) => {
      const caller = (request as Partial<typeof request>).caller;
      return caller ? `principal:${caller.tenantId}:${caller.principal.id}` : `ip:${request.ip}`;
    },
    // Becomes a 429 problem+json through the shared error handler; the plugin adds Retry-After.
    errorResponseBuilder: (_request, context) => Object.assign(
      new Error(`Rate limit exceeded: ${context.max} requests per minute; retry after ${Math.ceil(context.ttl / 1000)} s`),
      { statusCode: 429, code: 'rate_limited' },
    ),
  };
}
