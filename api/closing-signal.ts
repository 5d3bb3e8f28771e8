import { setMaxListeners } from 'node:events';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * Aborted when the server begins to close, so that requests that wait (long polls, event streams,
 * MCP calls) answer at once instead of holding the shutdown. Every waiting request listens to it:
 * fifty long polls are fifty listeners, not a leak to warn about.
 */
export function closingSignal(app: FastifyInstance): AbortSignal {
  const closing = new AbortController();
  setMaxListeners(0, closing.signal);
  app.addHook('preClose', async () => closing.abort());
  return closing.signal;
}

/**
 * Aborted when the caller goes away before its answer is sent (a closed tab, a dropped
 * connection), or when the server begins to close: work only this answer waits for can stop.
 */
export function callerGoneSignal(reply: FastifyReply, closing: AbortSignal): AbortSignal {
  const gone = new AbortController();
  const abort = () => gone.abort();
  closing.addEventListener('abort', abort, { once: true });
  reply.raw.once('close', () => {
    closing.removeEventListener('abort', abort);
    if (!reply.raw.writableFinished) abort();
  });
  return gone.signal;
}
