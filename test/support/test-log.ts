import pino from 'pino';
import { createLogger, type Logger } from '../../platform/logger';

/** Where test-environment.ts collects the log text of the test that runs. */
export const TEST_LOG_SINK = '__ENGINE_TEST_LOG__';

export function testLogSink(): ((text: string) => void) | undefined {
  return (globalThis as Record<string, unknown>)[TEST_LOG_SINK] as ((text: string) => void) | undefined;
}

/**
 * A logger for the engine under test. Inside jest it writes to the test environment's buffer,
 * which is printed only when a test fails (test-environment.ts); LOG_LEVEL picks the level.
 */
export function testLogger(name: string): Logger {
  const level = process.env.LOG_LEVEL ?? 'warn';
  const sink = testLogSink();
  if (!sink) return createLogger(level, name);
  return pino({ name, level, base: { pid: process.pid } }, { write: sink });
}
