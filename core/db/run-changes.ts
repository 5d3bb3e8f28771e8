import pg from 'pg';
import type { Logger } from '../logger';
import type { Db } from './pool';

/**
 * Run changes pushed by PostgreSQL (the triggers of migration 2), fanned out to the requests that
 * wait on them: one LISTEN connection per process, however many long polls and event streams are
 * open. A waiter only learns "this run may have changed" and re-reads the database, so a lost or
 * duplicated notification costs at most one extra read.
 *
 * When the connection drops, every waiter is woken (it re-reads, then waits again) and the feed
 * reconnects; once listening again it wakes everyone once more, because notifications sent while
 * it was away are lost.
 */

export type RunChange = 'event' | 'progress' | 'ended' | 'input';

/**
 * `event`: an event that changes the run object (a turn or tool call ended, an approval, a question);
 * `progress`: one that does not (a step started: migration 9); `ended`: the run's result was written;
 * `input`: a run input (elicitation) was answered or closed; workers waiting for answers watch it.
 */
const CHANNELS: Record<string, RunChange> = {
  engine_run_event: 'event', engine_run_progress: 'progress', engine_run_ended: 'ended', engine_run_input: 'input',
};

export interface RunWatch {
  /** Resolves on a change of the watched kinds since the last call (at once if one came meanwhile), after `ms`, or on abort. */
  next(ms: number, signal?: AbortSignal): Promise<void>;
  close(): void;
}

export interface RunChangeFeed {
  /** Watch before reading the run: a change between the read and next() is then not missed. */
  watch(runId: string, kinds: readonly RunChange[]): RunWatch;
  /**
   * Every change as it is heard: the run's id and the kind of change, or undefined when changes
   * may have been missed (the connection was lost, or has just been made). Returns the unsubscribe function.
   */
  onChange(listener: (runId: string | undefined, kind?: RunChange) => void): () => void;
  /** the LISTEN connection, for health checks and tests */
  status(): { listening: boolean; pid?: number };
  close(): Promise<void>;
}

export interface RunChangeFeedOptions {
  /**
   * the kinds of change heard (default: all). Each notification wakes every listening connection's
   * backend and process: a worker, which waits for answers only, listens for `input` alone, not
   * for the events every step of every run writes.
   */
  kinds?: readonly RunChange[];
  /** first reconnect delay; it doubles up to 5 s */
  retryMs?: number;
  /** a round trip on the idle LISTEN connection, so that a silently dead one is noticed */
  pingMs?: number;
  /**
   * Listen only while someone waits (a watch or an onChange listener), and let go of the
   * connection `idleMs` after the last one left (default: listen for the feed's whole life).
   * PostgreSQL wakes every LISTENing backend of the database at each NOTIFY, whatever its
   * channels: a worker, which waits for answers rarely, must not be woken by every step of every run.
   */
  onDemand?: { idleMs: number };
}

interface Watcher { kinds: readonly RunChange[]; pending: boolean; wake?: () => void }

export function listenForRunChanges(db: Db, logger: Logger, options: RunChangeFeedOptions = {}): RunChangeFeed {
  const retryMs = options.retryMs ?? 250;
  const pingMs = options.pingMs ?? 30_000;
  const channels = Object.keys(CHANNELS).filter((c) => !options.kinds || options.kinds.includes(CHANNELS[c]));
  const watchers = new Map<string, Set<Watcher>>();
  let client: pg.Client | undefined;
  let closed = false;
  let delay = retryMs;
  let retryTimer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;
  let idleTimer: NodeJS.Timeout | undefined;

  const poke = (w: Watcher) => {
    w.pending = true;
    w.wake?.();
  };
  const listeners = new Set<(runId: string | undefined, kind?: RunChange) => void>();
  const wakeAll = () => {
    for (const listener of listeners) listener(undefined);
    for (const set of watchers.values()) for (const w of set) poke(w);
  };

  const onNotification = (msg: pg.Notification) => {
    const kind = CHANNELS[msg.channel];
    if (kind && msg.payload) for (const listener of listeners) listener(msg.payload, kind);
    const set = msg.payload ? watchers.get(msg.payload) : undefined;
    if (!kind || !set) return;
    for (const w of set) if (w.kinds.includes(kind)) poke(w);
  };

  const wanted = () => !closed && (!options.onDemand || watchers.size > 0 || listeners.size > 0);

  const lost = (c: pg.Client, err?: Error) => {
    if (client !== c) return;
    client = undefined;
    void c.end().catch(() => undefined);
    if (wanted()) logger.warn({ err: err?.message }, 'run change listener lost its connection; reconnecting');
    wakeAll();
    scheduleConnect();
  };

  const connect = async () => {
    // A connection of its own, beside the pool: it is held for the process's lifetime and must not take a pooled slot.
    const conn = new pg.Client({ ...db.options, application_name: 'engine-run-changes' });
    try {
      conn.on('notification', onNotification);
      conn.on('error', (err) => lost(conn, err));
      conn.on('end', () => lost(conn));
      await conn.connect();
      await conn.query(channels.map((c) => `LISTEN ${c}`).join('; '));
      if (!wanted()) {
        await conn.end();
        return;
      }
      client = conn;
      delay = retryMs;
      wakeAll(); // whatever happened before LISTEN took effect was not heard
    } catch (err) {
      await conn.end().catch(() => undefined);
      if (!wanted()) return;
      logger.warn({ err: (err as Error).message, retryInMs: delay }, 'run change listener could not connect');
      scheduleConnect();
    } finally {
      connecting = undefined;
    }
  };

  /** Someone waits: listen, unless listening or on the way to it. */
  const demand = () => {
    clearTimeout(idleTimer);
    idleTimer = undefined;
    if (!client && !connecting && !retryTimer && !closed) connecting = connect();
  };
  /** Someone stopped waiting: on demand, the connection goes once nobody has waited for idleMs. */
  const release = () => {
    if (!options.onDemand || wanted() || idleTimer) return;
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      if (wanted()) return;
      clearTimeout(retryTimer);
      retryTimer = undefined;
      const c = client;
      client = undefined;
      void c?.end().catch(() => undefined);
    }, options.onDemand.idleMs);
    idleTimer.unref();
  };

  function scheduleConnect() {
    if (!wanted() || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connecting = connect();
    }, delay);
    retryTimer.unref();
    delay = Math.min(delay * 2, 5_000);
  }

  const ping = setInterval(() => {
    const c = client;
    c?.query('SELECT 1').catch((err: Error) => lost(c, err));
  }, pingMs);
  ping.unref();
  if (!options.onDemand) connecting = connect();

  return {
    watch(runId, kinds) {
      const w: Watcher = { kinds, pending: false };
      let set = watchers.get(runId);
      if (!set) watchers.set(runId, (set = new Set()));
      set.add(w);
      demand();
      return {
        next(ms, signal) {
          // After close() no notification comes: a waiter sleeps out its time rather than spinning.
          if (w.pending || signal?.aborted || ms <= 0) {
            w.pending = false;
            return Promise.resolve();
          }
          return new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              signal?.removeEventListener('abort', done);
              w.wake = undefined;
              w.pending = false;
              resolve();
            };
            const timer = setTimeout(done, ms);
            signal?.addEventListener('abort', done, { once: true });
            w.wake = done;
          });
        },
        close() {
          w.wake?.();
          set.delete(w);
          if (set.size === 0 && watchers.get(runId) === set) watchers.delete(runId);
          release();
        },
      };
    },
    onChange(listener) {
      listeners.add(listener);
      demand();
      return () => {
        listeners.delete(listener);
        release();
      };
    },
    status: () => ({ listening: client !== undefined, pid: (client as unknown as { processID?: number } | undefined)?.processID }),
    async close() {
      closed = true;
      clearInterval(ping);
      clearTimeout(retryTimer);
      clearTimeout(idleTimer);
      await connecting;
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
      wakeAll();
    },
  };
}

/** A worker's feed: answers to MCP servers' questions alone, heard only while a tool call waits for one. */
export function listenForAnswers(db: Db, logger: Logger): RunChangeFeed {
  return listenForRunChanges(db, logger, { kinds: ['input'], onDemand: { idleMs: 30_000 } });
}
