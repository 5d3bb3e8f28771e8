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

/** Which Host and Origin headers this API answers, and which origins get CORS headers. */
class HostRules {
  readonly loopbackOnly: boolean;
  private readonly allowed: ReadonlySet<string> | undefined;
  private readonly corsOrigins: ReadonlySet<string>;

  constructor(options: HostCheckOptions) {
    this.loopbackOnly = isLoopbackHost(options.listenHost);
    this.allowed = options.allowedHosts && new Set(options.allowedHosts.map((h) => h.toLowerCase()));
    this.corsOrigins = new Set(options.corsOrigins.map((o) => o.toLowerCase().replace(/\/$/, '')));
  }

  acceptsHost(value: string): boolean {
    const host = parseHost(value);
    if (!host) return false;
    if (LOOPBACK_NAMES.has(host.name)) return true;
    if (this.loopbackOnly) return false;
    return !this.allowed || this.allowed.has(host.name) || this.allowed.has(host.withPort);
  }

  /**
   * An Origin passes when it names a loopback host, an ALLOWED_HOSTS entry or the request's own
   * Host (same origin), or is listed in CORS_ORIGINS. `null` (sandboxed frames, file: pages) never does.
   */
  acceptsOrigin(origin: string, requestHost: string): boolean {
    const normalised = origin.toLowerCase();
    if (this.corsOrigins.has(normalised)) return true;
    let url: URL;
    try {
      url = new URL(normalised);
    } catch {
      return false;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    if (LOOPBACK_NAMES.has(url.hostname)) return true;
    if (this.loopbackOnly) return false;
    if (this.allowed) return this.allowed.has(url.hostname) || this.allowed.has(url.host);
    // Same host name: a page served by this API itself (the /docs UI behind a proxy, say).
    return url.hostname === parseHost(requestHost)?.name;
  }

  /** Whether browsers on `origin` get CORS headers. */
  sharesWith(origin: string): boolean {
    return this.corsOrigins.has(origin.toLowerCase());
  }
}

export function createHostCheck(options: HostCheckOptions) {
  const rules = new HostRules(options);
  return async function checkHostAndOrigin(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const host = request.headers.host;
    if (host === undefined || !rules.acceptsHost(host)) {
      throw new HttpProblem(403, rules.loopbackOnly
        ? 'Forbidden: this API listens on loopback and answers only requests whose Host is localhost, 127.0.0.1 or [::1]'
        : 'Forbidden: the Host header names a host this API does not serve (ALLOWED_HOSTS)', 'forbidden_host');
    }
    const origin = request.headers.origin;
    if (origin === undefined) return undefined;
    if (!rules.acceptsOrigin(origin, host)) {
      const why = 'Forbidden: requests from this Origin are not accepted (CORS_ORIGINS lists the origins browsers may call from)';
      throw new HttpProblem(403, why, 'forbidden_origin');
    }
    if (!rules.sharesWith(origin)) return undefined;
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
