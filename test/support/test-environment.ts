import { TestEnvironment } from 'jest-environment-node';
import { TEST_LOG_SINK } from './test-log';

/** The part of jest-circus's events this environment reads. */
interface TestEvent {
  name: string;
  test?: { name: string; errors: unknown[]; parent?: { name: string; parent?: unknown } };
  hook?: { type: string };
}

/** Log text kept for one test at most: the tail is what explains a failure. */
const LOG_LIMIT = 256 * 1024;

let exitWhenIdleInstalled = false;

/**
 * jest's node environment, plus:
 * - The engine's logs in tests go to a buffer (see test-log.ts), printed only for a test or hook
 *   that fails: a passing run prints no log lines.
 * - A jest worker exits as soon as its event loop is empty. jest ends a worker by closing its IPC
 *   channel and kills it 500 ms later ("A worker process has failed to exit gracefully"). A worker
 *   that ran the engine's tests holds a heap (Temporal SDK, fastify, ai, pg) whose teardown alone
 *   takes longer than that on a busy 2-core machine. 'beforeExit' fires only when nothing is left
 *   to run, so exiting there skips the teardown without hiding a leak: a leaked socket, timer or
 *   child process keeps the loop alive, 'beforeExit' never fires, and jest still reports it.
 */
export default class EngineTestEnvironment extends TestEnvironment {
  private log = '';

  constructor(...args: ConstructorParameters<typeof TestEnvironment>) {
    super(...args);
    this.global[TEST_LOG_SINK] = (text: string) => {
      this.log += text;
      if (this.log.length > LOG_LIMIT * 2) this.log = this.log.slice(-LOG_LIMIT);
    };
    if (!exitWhenIdleInstalled) {
      exitWhenIdleInstalled = true;
      process.once('beforeExit', () => process.exit());
    }
  }

  handleTestEvent(event: TestEvent): void {
    if (event.name === 'test_done' && event.test) {
      if (event.test.errors.length > 0) this.printLog(`the failed test "${fullName(event.test)}"`);
      this.log = '';
    } else if (event.name === 'hook_failure') {
      this.printLog(`the failed ${event.hook?.type ?? ''} hook`);
      this.log = '';
    }
  }

  private printLog(what: string): void {
    if (!this.log) return;
    const text = this.log.length > LOG_LIMIT ? `…\n${this.log.slice(-LOG_LIMIT)}` : this.log;
    process.stderr.write(`\n── engine log of ${what} ──\n${text}── end of log ──\n`);
  }
}

function fullName(test: { name: string; parent?: { name: string; parent?: unknown } }): string {
  const names = [test.name];
  for (let p = test.parent; p && p.name !== 'ROOT_DESCRIBE_BLOCK'; p = p.parent as typeof p) names.unshift(p.name);
  return names.join(' › ');
}
