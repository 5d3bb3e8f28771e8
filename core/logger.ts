import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Logs go to stderr, always: in stdio MCP contexts stdout belongs to the protocol.
 */
export function createLogger(level: string, name = 'engine'): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: true }));
}
