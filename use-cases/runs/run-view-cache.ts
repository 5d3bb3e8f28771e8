import type { RunChangeFeed } from '../../store/runs/change-feed';

/**
 * The run objects this API process has read, each kept until PostgreSQL says its run changed.
 * Every write that changes a run object also inserts a run event, a result or an input row in the
 * same transaction, whose trigger NOTIFYs the run's id on commit (migrations 5 and 7); the
 * process's LISTEN connection hears it and the object is dropped here. So a poll of a run that
 * has not changed since the last read costs no query, however many clients poll. The start of a
 * step changes nothing a run object shows, and is announced apart (migration 9): it drops nothing.
 *
 * The cache holds nothing while the LISTEN connection is down, and forgets everything when it is
 * lost or made again (changes may have gone unheard). A read that a change overtakes is not kept.
 * Endpoints that change a run themselves (deciding, answering, cancelling) forget it, so their
 * caller's next read shows what they did, without waiting for the notification.
 *
 * Each object is kept with its run's tenant and given only to a read for that tenant: to any other
 * tenant the run is unknown, as it is to PostgreSQL's tenant-filtered reads (run ids are unique
 * across tenants, so a kept object of another tenant means the reader's tenant has no such run).
 */
export interface RunViewCache<V extends object = object> {
  /**
   * The run's object as `tenantId` sees it: `load` reads it for that tenant (undefined: the tenant
   * has no such run). `keep` false: the object is not kept (it shows what other runs' changes
   * change, which this run's notifications do not announce).
   */
  read<T extends V>(
    runId: string, tenantId: string, load: () => Promise<T | undefined>, keep?: (view: T) => boolean,
  ): Promise<T | undefined>;
  /**
   * Keeps `view` as the run's (of tenant `tenantId`), unless a change is heard first; for a run
   * just recorded, whose workflow has not started: nothing can have changed it yet, and the long
   * poll that follows its start then costs no query.
   */
  seed(runId: string, tenantId: string, view: V): void;
  forget(runId: string): void;
  close(): void;
}

/** Bounds the memory: the least recently read go first. */
const MAX_RUNS = 1_000;

interface Kept { tenantId: string; view: object }
interface Flight<T> { tenantId: string; promise: Promise<T | undefined>; stale: boolean }

export function createRunViewCache(changes: RunChangeFeed, maxRuns = MAX_RUNS): RunViewCache {
  const views = new Map<string, Kept>();
  /** reads in flight, by run; a change marks them stale, and a stale read is neither kept nor joined */
  const loading = new Map<string, Flight<object>>();

  const forget = (runId: string | undefined) => {
    if (runId === undefined) {
      views.clear();
      for (const flight of loading.values()) flight.stale = true;
      return;
    }
    views.delete(runId);
    const flight = loading.get(runId);
    if (flight) flight.stale = true;
  };
  // A step's start (`progress`) changes nothing a run object shows: the cache does not ask to hear of it.
  const unsubscribe = changes.onChange(forget, ['event', 'ended', 'input']);

  function read<T extends object>(
    runId: string, tenantId: string, load: () => Promise<T | undefined>, keep?: (view: T) => boolean,
  ): Promise<T | undefined> {
    const hit = views.get(runId);
    if (hit) {
      // Another tenant's run: unknown to this one, and nothing to ask PostgreSQL.
      if (hit.tenantId !== tenantId) return Promise.resolve(undefined);
      views.delete(runId);
      views.set(runId, hit);
      // One cache holds one kind of object (the run view); the casts only restore its type.
      return Promise.resolve(hit.view as T);
    }
    const current = loading.get(runId);
    // A read for another tenant is its own (its load sees no such run); only the same tenant's is joined.
    if (current && current.tenantId !== tenantId) return load();
    if (current && !current.stale) return current.promise as Promise<T | undefined>;
    const flight: Flight<T> = { tenantId, stale: false, promise: load() };
    loading.set(runId, flight);
    const settle = () => {
      if (loading.get(runId) === flight) loading.delete(runId);
    };
    flight.promise.then((view) => {
      settle();
      if (!view || flight.stale || !changes.status().listening || (keep && !keep(view))) return;
      views.set(runId, { tenantId, view });
      for (const oldest of views.keys()) {
        if (views.size <= maxRuns) break;
        views.delete(oldest);
      }
    }, settle);
    return flight.promise;
  }

  return {
    read,
    seed(runId, tenantId, view) {
      void read(runId, tenantId, () => Promise.resolve(view));
    },
    forget,
    close: unsubscribe,
  };
}
