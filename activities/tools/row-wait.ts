import { setTimeout as sleep } from 'node:timers/promises';
import type { ToolRun } from '../tool-handler';

/**
 * Waiting inside a tool call's activity for a person's answer written to PostgreSQL by the API
 * (a 2025-era server's question, or a reviewer's decision on its sampling request): the row is
 * re-read when the run's `input` notification comes (LISTEN), on a period in case one was lost,
 * and polled when the worker has no LISTEN connection. An abort withdraws it, the deadline expires it.
 */

/** A missed notification costs at most this long: the row is re-read on this period regardless. */
const RECHECK_MS = 5_000;
/** Without a LISTEN connection (a worker composed without one), the row is polled this often. */
const POLL_MS = 1_000;

export interface WaitedRow<T> {
  /** the outcome once the row is settled; undefined while it waits */
  read(): Promise<T | undefined>;
  /** ends the wait on the row; undefined when an answer came first (it is read again) */
  close(why: 'withdrawn' | 'expired'): Promise<T | undefined>;
}

export async function waitForRow<T>(run: ToolRun, deadline: number, signal: AbortSignal, row: WaitedRow<T>): Promise<T> {
  const watch = run.deps.runChanges?.watch(run.input.runId, ['input']);
  let endWait: (() => void) | undefined;
  try {
    for (;;) {
      const settled = await row.read();
      if (settled !== undefined) return settled;
      // The run is listed as waiting for a person from the first read that finds no answer.
      endWait ??= run.waitingForPerson?.();
      const left = deadline - Date.now();
      const why = signal.aborted ? 'withdrawn' : left <= 0 ? 'expired' : undefined;
      if (why) {
        const closed = await row.close(why);
        if (closed !== undefined) return closed;
        continue;
      }
      if (watch) await watch.next(Math.min(left, RECHECK_MS), signal);
      else await sleep(Math.min(left, POLL_MS), undefined, { signal }).catch(() => undefined); // an abort ends the wait early
    }
  } finally {
    endWait?.();
    watch?.close();
  }
}
