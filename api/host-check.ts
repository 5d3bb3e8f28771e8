import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isLoopbackHost } from '../platform/config';
import { HttpProblem } from './problem';

/**
 * The one Host and Origin check, for every route (REST, SSE, /mcp, /docs). A page on evil.example
 * whose name the attacker re-points at 127.0.0.1 (DNS rebinding) is same-origin to the browser, so
 * no CORS rule stops it; only the Host it sends (evil.example) and its Origin give it away.
 */

export interface HostCheckOptions {
  /** the address the API listens on: on loopback only loopback names are answered */
  listenHost: string;
  /** host names (optionally with :port) answered off loopback besides loopback names; absent: any */
  allowedHosts?: readonly string[];
  /** origins that browsers may call from; the only ones that get CORS headers */
  corsOrigins: readonly string[];
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** `hostname` and `hostname:port` of a Host header value, lower-case; undefined when it does not parse. */
function parseHost(value: string): { name: string; withPort: string } | undefined {
  try {
    const url = new URL(`http://${value}`);
    if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) return undefined;
    return { name: url.hostname, withPort: url.host };
  } catch {
    return undefined;
  }
}

const CORS_ALLOW_HEADERS = 'authorization, content-type, idempotency-key, last-event-id, mcp-session-id, mcp-protocol-version';
const CORS_EXPOSE_HEADERS = 'mcp-session-id, retry-after, location';

export function createHostCheck(options: HostCheckOptions) {
  const loopbackOnly = isLoopbackHost(options.listenHost);
  const allowed = options.allowedHosts && new Set(options.allowedHosts.map((h) => h.toLowerCase()));
  const corsOrigins = new Set(options.corsOrigins.map((o) => o.toLowerCase().replace(/\/$/, '')));

  const acceptedHost = (value: string): boolean => {
    const host = parseHost(value);
    if (!host) return false;
    if (LOOPBACK_NAMES.has(host.name)) return true;
    if (loopbackOnly) return false;
    return !allowed || allowed.has(host.name) || allowed.has(host.withPort);
  };

  /**
   * An Origin passes when it names a loopback host, an ALLOWED_HOSTS entry or the request's own
   * Host (same origin), or is listed in CORS_ORIGINS. `null` (sandboxed frames, file: pages) never does.
   */
  const acceptedOrigin = (origin: string, requestHost: string): boolean => {
    const normalised = origin.toLowerCase();
    if (corsOrigins.has(normalised)) return true;
    let url: URL;
    try {
      url = new URL(normalised);
    } catch {
      return false;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    if (LOOPBACK_NAMES.has(url.hostname)) return true;
    if (loopbackOnly) return false;
    if (allowed) return allowed.has(url.hostname) || allowed.has(url.host);
    // Same host name: a page served by this API itself (the /docs UI behind a proxy, say).
    return url.hostname === parseHost(requestHost)?.name;
  };

  return async function checkHostAndOrigin(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const host = request.headers.host;
    if (host === undefined || !acceptedHost(host)) {
      throw new HttpProblem(403, loopbackOnly
        ? 'Forbidden: this API listens on loopback and answers only requests whose Host is localhost, 127.0.0.1 or [::1]'
        : 'Forbidden: the Host header names a host this API does not serve (ALLOWED_HOSTS)', 'forbidden_host');
    }
    const origin = request.headers.origin;
    if (origin === undefined) return undefined;
    if (!acceptedOrigin(origin, host)) {
      throw new HttpProblem(403, 'Forbidden: requests from this Origin are not accepted (CORS_ORIGINS lists the origins browsers may call from)',
        'forbidden_origin');
    }
    if (!corsOrigins.has(origin.toLowerCase())) return undefined;
    reply.header('access-control-allow-origin', origin).header('vary', 'Origin')
      .header('access-control-expose-headers', CORS_EXPOSE_HEADERS);
    // A preflight carries no credentials, so it is answered here, before authentication.
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      return reply.code(204)
        .header('access-control-allow-methods', 'GET, POST, PATCH, DELETE')
        .header('access-control-allow-headers', CORS_ALLOW_HEADERS)
        .header('access-control-max-age', '600')
        .send();
    }
    return undefined;
  };
}

/** Registers the check before every other hook, so a refused request does no other work. */
export const hostCheck = fp(async (app: FastifyInstance, options: HostCheckOptions) => {
  app.addHook('onRequest', createHostCheck(options));
}, { name: 'host-check' });
