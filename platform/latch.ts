/**
 * A latch that remembers being poked: next() resolves at once if it was poked since the last call,
 * otherwise on the next poke, after `ms`, or on abort, whichever comes first.
 */
export interface Latch {
  poke(): void;
  next(ms: number, signal?: AbortSignal): Promise<void>;
  /** ends a next() in progress without leaving the latch poked */
  interrupt(): void;
}

export function createLatch(): Latch {
  let pending = false;
  let wake: (() => void) | undefined;
  return {
    poke() {
      pending = true;
      wake?.();
    },
    next(ms, signal) {
      if (pending || signal?.aborted || ms <= 0) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          wake = undefined;
          pending = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener('abort', done, { once: true });
        wake = done;
      });
    },
    interrupt() {
      wake?.();
    },
  };
}
