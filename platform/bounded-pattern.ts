import { createContext, Script } from 'node:vm';

/*
 * Synchronous work on what a stranger wrote (a regular expression, a JSON Schema's `pattern`) run
 * under a V8 timeout: node:vm's watchdog interrupts it, regular expressions that backtrack for ages
 * (`(a+)+$`) included, and this thread is free again. The one place the engine bounds such work.
 */

const sandbox = createContext({});
const runTask = new Script('task()');

/** What withinTime throws when `task` ran out of its time. */
export class TimedOut extends Error {}

/** `task`, interrupted once it has run `timeoutMs` (synchronous code only, regular expressions included). */
export function withinTime<T>(task: () => T, timeoutMs: number): T {
  sandbox.task = task;
  try {
    return runTask.runInContext(sandbox, { timeout: timeoutMs }) as T;
  } catch (err) {
    if ((err as { code?: string })?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new TimedOut();
    throw err;
  } finally {
    sandbox.task = undefined;
  }
}

/** How a bounded search went: it found the pattern, did not, or ran out of time. */
export type BoundedSearch = 'matched' | 'not_matched' | 'timed_out';

/**
 * Whether `text` matches the regular expression `source` (JavaScript syntax, no flags), searched
 * for at most `timeoutMs`. A source that is not a regular expression matches nothing.
 */
export function searchBounded(source: string, text: string, timeoutMs: number): BoundedSearch {
  try {
    return withinTime(() => new RegExp(source).test(text), timeoutMs) ? 'matched' : 'not_matched';
  } catch (err) {
    return err instanceof TimedOut ? 'timed_out' : 'not_matched';
  }
}
