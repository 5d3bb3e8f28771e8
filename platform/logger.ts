import pino, { type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export interface LoggerOptions {
  /** human-readable lines instead of JSON; by default when stderr is a terminal */
  pretty?: boolean;
}

/**
 * Logs go to stderr, always: in stdio MCP contexts stdout belongs to the protocol. On a terminal
 * they are pino-pretty's readable lines; anywhere else (a file, a collector, a test) one JSON object
 * per line. Both are written synchronously, so nothing is lost when a process exits right after logging.
 */
export function createLogger(level: string, name = 'engine', opts: LoggerOptions = {}): Logger {
  const readable = opts.pretty ?? Boolean(process.stderr.isTTY);
  const destination: DestinationStream = readable
    ? pretty({ destination: 2, sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
    : pino.destination({ fd: 2, sync: true });
  return pino({ name, level, base: { pid: process.pid } }, destination);
}
