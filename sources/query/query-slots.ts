/**
 * Bounded concurrency for source queries in one process. A query holds a database connection of
 * its own for as long as the LLM's SQL runs (pg_sleep is allowed on purpose), so without a bound a
 * turn of 40 slow queries would take every connection the server allows.
 */
export interface QuerySlots {
  /** a release function, or undefined when no slot came free within waitMs */
  acquire(waitMs: number): Promise<(() => void) | undefined>;
  readonly running: number;
}

export function createQuerySlots(max: number): QuerySlots {
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return {
    get running() {
      return running;
    },
    acquire(waitMs) {
      if (running < max) {
        running++;
        return Promise.resolve(once(release));
      }
      return new Promise((resolve) => {
        const grant = () => {
          clearTimeout(timer);
          resolve(once(release));
        };
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(grant), 1);
          resolve(undefined);
        }, waitMs);
        waiting.push(grant);
      });
    },
  };
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      fn();
    }
  };
}

const byLimit = new Map<number, QuerySlots>();

/** The process's slots for a given bound: every source query of a worker shares them. */
export function processQuerySlots(max: number): QuerySlots {
  let slots = byLimit.get(max);
  if (!slots) byLimit.set(max, (slots = createQuerySlots(max)));
  return slots;
}
