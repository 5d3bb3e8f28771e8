import { once } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Server-Sent Events framing on the raw response. (@fastify/sse needs Node ≥ 20.20.2 and we
 * support 20.19, and the framing is a few lines.) The stream takes the response over from
 * Fastify, so everything after `open` must be handled here: backpressure, heartbeats, and a
 * client that goes away.
 */
export interface SseStream {
  /** aborted when the client disconnects or `close` is called */
  readonly signal: AbortSignal;
  /** writes one event; waits while the client is slow to read. Resolves false once the stream is closed. */
  send(event: { id?: string; event: string; data: unknown }): Promise<boolean>;
  close(): void;
}

export interface SseOptions {
  heartbeatMs: number;
  /** how long an EventSource waits before reconnecting */
  retryMs?: number;
  /** aborts the stream too (the server is closing) */
  stop?: AbortSignal;
}

export function openSse(request: FastifyRequest, reply: FastifyReply, opts: SseOptions): SseStream {
  reply.hijack();
  const res = reply.raw;
  const done = new AbortController();
  const close = () => {
    if (done.signal.aborted) return;
    done.abort();
    clearInterval(heartbeat);
    opts.stop?.removeEventListener('abort', close);
    if (!res.writableEnded) res.end();
  };
  // 'close' on the response fires when the client disconnects as well as after a normal end.
  res.on('close', close);
  request.raw.on('aborted', close);
  opts.stop?.addEventListener('abort', close, { once: true });

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // nginx buffers responses unless told not to
    'x-accel-buffering': 'no',
  });
  res.write(`retry: ${opts.retryMs ?? 2000}\n\n`);

  let draining = false;
  // A comment line: ignored by clients, but traffic keeps idle-timeout proxies from cutting the stream.
  const heartbeat = setInterval(() => {
    if (!draining && !done.signal.aborted) res.write(': keep-alive\n\n');
  }, opts.heartbeatMs);
  heartbeat.unref();

  const write = async (frame: string): Promise<boolean> => {
    if (done.signal.aborted) return false;
    if (res.write(frame)) return true;
    draining = true;
    try {
      await once(res, 'drain', { signal: done.signal });
      return true;
    } catch {
      return false; // closed while waiting
    } finally {
      draining = false;
    }
  };

  if (opts.stop?.aborted) close();
  return {
    signal: done.signal,
    send: ({ id, event, data }) => {
      // JSON.stringify never emits a raw newline, so the payload is one data line.
      const lines = [id === undefined ? '' : `id: ${id}\n`, `event: ${event}\n`, `data: ${JSON.stringify(data)}\n\n`];
      return write(lines.join(''));
    },
    close,
  };
}
