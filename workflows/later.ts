/**
 * A value now, or a promise of it when the workflow must wait (a person's answer, an activity).
 * Every promise workflow code makes costs the Temporal SDK a stack trace (its stack-trace query
 * records one for each), so the steps every turn goes through (its budget checks, its calls'
 * routing) answer with a value when there is nothing to wait for, and the run awaits only a
 * promise: `x instanceof Promise ? await x : x` (awaiting a value would make a promise too).
 */
export type Later<T> = T | Promise<T>;
