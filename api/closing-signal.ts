import { setMaxListeners } from 'node:events';
import type { FastifyInstance } from 'fastify';

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
