import type { RunChange, RunChangeFeed } from '../../store/runs/change-feed';
import { LetGoTimer } from '../../store/runs/let-go-timer';

/**
 * The run objects this API process has read, each kept until PostgreSQL says its run changed, while
 * its clients poll runs. Every write that changes a run object also inserts a run event, a result or
 * an input row in the same transaction, whose trigger NOTIFYs the run's id on commit (migrations 5
 * and 7); the process's LISTEN connection hears it and the object is dropped here. So a poll of a
 * run that has not changed since the last read costs no query, however many clients poll. The start
 * of a step changes nothing a run object shows, and is announced apart (migration 9): it drops nothing.
 *
 * A run's events are announced only while some process listens for them (migration 41), and every
 * listening backend of the database wakes at each. So the cache follows runs, listens, and keeps
 * objects, only while its clients poll: from the first read of a run read in the last `followMs`
 * (a client reads it again) until `followMs` passes without a read. A process whose clients start
 * runs and wait for their ends (long polls wait for the result, which is always announced) reads
 * each run's object when asked, and neither it nor PostgreSQL does anything for each step.
 *
 * The cache holds nothing while the LISTEN connection is down or not yet listening, and forgets
 * everything when it is lost or made again (changes may have gone unheard). A read that a change
 * overtakes, or that began before the cache followed runs, is not kept. Endpoints that change a
 * run themselves (deciding, answering, cancelling) forget it, so their caller's next read shows
 * what they did, without waiting for the notification.
 *
 * Each object is kept with its run's tenant and given only to a read for that tenant: to any other
 * tenant the run is unknown, as it is to PostgreSQL's tenant-filtered reads (run ids are unique
 * across tenants, so a kept object of another tenant means the reader's tenant has no such run).
 */
export interface RunViewCache<V extends object = object> {
  /** The run's object as `tenantId` sees it: `load` reads it for that tenant (undefined: the tenant has no such run). */
  read<T extends V>(
    runId: string, tenantId: string, load: () => Promise<T | undefined>, options?: ReadOptions<T>,
  ): Promise<T | undefined>;
  /**
   * Keeps `view` as the run's (of tenant `tenantId`) while the cache follows runs, unless a change
   * is heard first; for a run just recorded, whose workflow has not started: nothing can have
   * changed it yet, and the long poll that follows its start then costs no query.
   */
  seed(runId: string, tenantId: string, view: V): void;
  forget(runId: string): void;
  close(): void;
}

export interface ReadOptions<T> {
  /** false: the object is not kept (it shows what other runs' changes change, which this run's notifications do not announce) */
  keep?: (view: T) => boolean;
  /** false: the read is not a client's (a long poll's read once woken): it does not count as reading the run again */
  byClient?: boolean;
}

export interface RunViewCacheOptions {
  /** Bounds the memory: the least recently read go first. */
  maxRuns?: number;
  /** how long after a read a read of the same run starts following runs, and after the last read following ends */
  followMs?: number;
}

/**
 * what a kept object needs to hear of: a run's events, its result, its inputs' answers; a step's
 * start (`progress`) changes nothing a run object shows, so the cache does not ask to hear of it
 */
const FOLLOWED: readonly RunChange[] = ['event', 'ended', 'input'];

const MAX_RUNS = 1_000;
const FOLLOW_MS = 30_000;

interface Kept { tenantId: string; view: object }
interface Flight<T> { tenantId: string; promise: Promise<T | undefined>; stale: boolean; epoch: number }

/**
 * Whether the cache follows runs: from a client's read of a run it read less than `followMs` ago
 * until `followMs` passes without a client's read. Following, it listens for what a kept object
 * needs to hear of (`FOLLOWED`), and the LISTEN connection holds the locks that say so (migration 41).
 */
class Following {
  /** the runs clients read, with when they last did, oldest first */
  private readonly recent = new Map<string, number>();
  private unsubscribe: (() => void) | undefined;
  /** moves on as following starts: a read begun before is not kept (one begun before it ends is made stale by onChange) */
  epoch = 0;
  private readonly timer: LetGoTimer;

  constructor(
    private readonly changes: RunChangeFeed,
    private readonly onChange: (runId: string | undefined) => void,
    private readonly followMs: number,
    private readonly maxRuns: number,
  ) {
    this.timer = new LetGoTimer(followMs, () => this.end());
  }

  /** Whether an object read now can be kept: following, and listening for all it needs to hear of. */
  listening(): boolean {
    if (!this.unsubscribe) return false;
    const { listening, kinds } = this.changes.status();
    return listening && FOLLOWED.every((kind) => kinds.includes(kind));
  }

  /** A client read the run. */
  clientRead(runId: string): void {
    const now = Date.now();
    if (this.unsubscribe) this.timer.released();
    else if (now - (this.recent.get(runId) ?? -Infinity) < this.followMs) this.start();
    this.recent.delete(runId);
    this.recent.set(runId, now);
    dropOldest(this.recent, this.maxRuns);
  }

  close(): void {
    this.timer.stop();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private start(): void {
    this.epoch += 1;
    this.unsubscribe = this.changes.onChange(this.onChange, FOLLOWED);
    this.timer.released();
    this.timer.arm();
  }

  /** No client has read a run for followMs: what is kept goes, as it would no longer hear of changes. */
  private end(): void {
    this.timer.takeDue();
    this.close();
    this.onChange(undefined);
  }
}

/** Drops the least recently set of `map` until it holds at most `max`. */
function dropOldest(map: Map<string, unknown>, max: number): void {
  for (const oldest of map.keys()) {
    if (map.size <= max) break;
    map.delete(oldest);
  }
}

export function createRunViewCache(changes: RunChangeFeed, options: RunViewCacheOptions = {}): RunViewCache {
  const maxRuns = options.maxRuns ?? MAX_RUNS;
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
  const following = new Following(changes, forget, options.followMs ?? FOLLOW_MS, maxRuns);

  function read<T extends object>(
    runId: string, tenantId: string, load: () => Promise<T | undefined>, { keep, byClient = true }: ReadOptions<T> = {},
  ): Promise<T | undefined> {
    if (byClient) following.clientRead(runId);
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
    const flight: Flight<T> = { tenantId, stale: false, epoch: following.epoch, promise: load() };
    loading.set(runId, flight);
    const settle = () => {
      if (loading.get(runId) === flight) loading.delete(runId);
    };
    flight.promise.then((view) => {
      settle();
      if (!view || flight.stale || flight.epoch !== following.epoch || !following.listening() || (keep && !keep(view))) return;
      views.set(runId, { tenantId, view });
      dropOldest(views, maxRuns);
    }, settle);
    return flight.promise;
  }

  return {
    read,
    seed(runId, tenantId, view) {
      void read(runId, tenantId, () => Promise.resolve(view), { byClient: false });
    },
    forget,
    close: () => following.close(),
  };
}
