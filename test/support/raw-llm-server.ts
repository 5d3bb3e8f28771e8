import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that writes a model's answer as raw bytes, write by write (events split across
 * writes, CRLF lines, errors mid-stream, answers without end), for tests of how the engine reads a
 * provider's wire format (llm/live-stream.ts). test/support/fake-llm-server.ts speaks the formats
 * from a reply's description instead.
 */

/** What the server writes: raw strings, or a wait for the client (a promise) before what follows. */
export type Write = string | (() => Promise<void>);

export interface RawServer {
  url: string;
  /** each request, and for each whether the client went before the server had written all (it stopped reading) */
  requests: { path: string; headers: http.IncomingHttpHeaders; clientLeft?: boolean }[];
  /** what the next requests get: the writes may be a generator without end, written as fast as the client reads */
  play(writes: Iterable<Write>, status?: number, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

/** Resolves when the response may take more (or is gone). */
const drained = (res: http.ServerResponse) => new Promise<void>((resolve) => {
  const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
  res.on('drain', done).on('close', done);
});

export async function rawServer(): Promise<RawServer> {
  let script: { writes: Iterable<Write>; status: number; headers: Record<string, string> } = { writes: [], status: 200, headers: {} };
  const requests: RawServer['requests'] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const request: RawServer['requests'][number] = { path: req.url ?? '', headers: req.headers };
      requests.push(request);
      const { writes, status, headers } = script;
      res.writeHead(status, { 'content-type': 'text/event-stream', ...headers });
      res.once('close', () => { request.clientLeft = !res.writableFinished; });
      void (async () => {
        for (const w of writes) {
          if (res.destroyed) return;
          if (typeof w !== 'string') await w();
          else if (!res.write(w)) await drained(res);
          await new Promise((r) => setTimeout(r, 2));
        }
        res.end();
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    play(writes, status = 200, headers = {}) { script = { writes, status, headers }; },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** One server-sent event. */
export const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
/** An OpenAI chat completions chunk with this delta. */
export const oa = (delta: Record<string, unknown>, finish: string | null = null) => sse({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
/** An Anthropic Messages event. */
export const an = (type: string, rest: Record<string, unknown> = {}) => sse({ type, ...rest }, type);
