import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
/** What a scrape returns: a prom-client registry, or another exposition (the Temporal SDK's, relayed). */
export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

export interface MetricsServerOptions {
  host: string;
  /** 0: any free port */
  port: number;
  /** when set, a scrape must send `Authorization: Bearer <token>` */
  token?: string;
  registry: MetricsSource;
}

export interface MetricsServer {
  /** http://host:port/metrics */
  url: string;
  close(): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Hashing first gives equal-length buffers, so the comparison leaks neither the token nor its length. */
function bearerCheck(token: string | undefined): (header: string | undefined) => boolean {
  if (!token) return () => true;
  const expected = digest(token);
  return (header) => {
    const match = /^Bearer (.+)$/i.exec(header ?? '');
    return match !== null && timingSafeEqual(digest(match[1]), expected);
  };
}

function answer(res: http.ServerResponse, status: number, text: string, headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(`${text}\n`);
}

/**
 * A process's Prometheus endpoint: GET /metrics and nothing else, on a port of its own, so that it
 * never shares the API's authentication, rate limit or exposure.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const authorized = bearerCheck(options.token);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') return answer(res, 404, 'Not found: metrics are served at /metrics');
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, 'Method not allowed', { allow: 'GET, HEAD' });
    if (!authorized(req.headers.authorization)) {
      return answer(res, 401, 'Unauthorized: send Authorization: Bearer <METRICS_TOKEN>', { 'www-authenticate': 'Bearer' });
    }
    options.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': options.registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => answer(res, 500, `Collecting metrics failed: ${(err as Error).message}`),
    );
  });
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
