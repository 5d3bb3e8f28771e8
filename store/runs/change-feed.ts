import pg from 'pg';
import { createLatch, type Latch } from '../../platform/latch';
import type { Logger } from '../../platform/logger';
import type { Db } from '../pool';
import { parseTextPieces, TEXT_CHANNEL, type TextPiece } from './turn-drafts';
import type { RunChange, RunChangeFeed, RunChangeFeedOptions } from './run-changes';

export type { RunChange, RunChangeFeed, RunChangeFeedOptions, RunWatch } from './run-changes';

/**
 * Run changes pushed by PostgreSQL (the triggers of migrations 5, 7 and 9), fanned out to the requests that
 * wait on them: one LISTEN connection per process, however many long polls and event streams are
 * open. A waiter only learns "this run may have changed" and re-reads the database, so a lost or
 * duplicated notification costs at most one extra read.
 *
 * When the connection drops, every waiter is woken (it re-reads, then waits again) and the feed
 * reconnects; once listening again it wakes everyone once more, because notifications sent while
 * it was away are lost.
 */

/**
 * `event`: an event that changes the run object (a turn or tool call ended, an approval, a question);
 * `progress`: one that does not (a step started: migration 9); `ended`: the run's result was written;
 * `input`: a run input (elicitation) was answered or closed; workers waiting for answers watch it;
 * `text`: pieces of turns' texts as the model writes them (turn-drafts.ts): its payload is the pieces.
 */
const CHANNEL_OF: Record<RunChange, string> = {
  event: 'engine_run_event', progress: 'engine_run_progress', ended: 'engine_run_ended', input: 'engine_run_input', text: TEXT_CHANNEL,
};
const KINDS = Object.keys(CHANNEL_OF) as RunChange[];
const KIND_OF = new Map(KINDS.map((kind) => [CHANNEL_OF[kind], kind]));

interface Watcher { kinds: readonly RunChange[]; latch: Latch }
type Listener = (runId: string | undefined, kind?: RunChange) => void;

export function listenForRunChanges(db: Db, logger: Logger, options: RunChangeFeedOptions = {}): RunChangeFeed {
  const retryMs = options.retryMs ?? 250;
  const pingMs = options.pingMs ?? 30_000;
  const lingerMs = options.lingerMs ?? 30_000;
  const watchers = new Map<string, Set<Watcher>>();
  let client: pg.Client | undefined;
  let closed = false;
  let delay = retryMs;
  let retryTimer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;
  /** the kinds the connection has been told to LISTEN for, once PostgreSQL has confirmed it */
  const listened = new Set<RunChange>();
  let lingerTimer: NodeJS.Timeout | undefined;
  /** when a watch or a listener last went: what nobody wants is let go of lingerMs after it */
  let releasedAt = 0;
  let letGoDue = false;
  let syncing = false;
  let resync = false;

  const listeners = new Map<Listener, readonly RunChange[]>();
  const textListeners = new Map<string, Set<(piece: TextPiece | undefined) => void>>();
  /** Tells those who want any of `kinds` that changes of them may have gone unheard. */
  const missed = (kinds: readonly RunChange[]) => {
    const wants = (own: readonly RunChange[]) => own.some((k) => kinds.includes(k));
    if (kinds.includes('text')) for (const set of textListeners.values()) for (const listener of set) listener(undefined);
    for (const [listener, own] of listeners) if (wants(own)) listener(undefined);
    for (const set of watchers.values()) for (const w of set) if (wants(w.kinds)) w.latch.poke();
  };
  const wakeAll = () => missed(KINDS);
  /** how many watches and listeners want each kind */
  const wanting: Record<RunChange, number> = { event: 0, progress: 0, ended: 0, input: 0, text: 0 };
  const want = (kinds: readonly RunChange[], by: 1 | -1) => {
    for (const k of new Set(kinds)) wanting[k] += by;
  };
  const wantedKinds = () => KINDS.filter((k) => wanting[k] > 0);
  const statement = (verb: 'LISTEN' | 'UNLISTEN', kinds: readonly RunChange[]) => kinds.map((k) => `${verb} ${CHANNEL_OF[k]}`);

  const onNotification = (msg: pg.Notification) => {
    const kind = KIND_OF.get(msg.channel);
    if (!kind || !msg.payload) return;
    if (kind === 'text') {
      for (const piece of parseTextPieces(msg.payload)) for (const listener of textListeners.get(piece.runId) ?? []) listener(piece);
      return;
    }
    for (const [listener, own] of listeners) if (own.includes(kind)) listener(msg.payload, kind);
    for (const w of watchers.get(msg.payload) ?? []) if (w.kinds.includes(kind)) w.latch.poke();
  };

  const wanted = () => !closed && (!options.onDemand || wantedKinds().length > 0);

  const lost = (c: pg.Client, err?: Error) => {
    if (client !== c) return;
    client = undefined;
    listened.clear();
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
      const kinds = wantedKinds();
      if (kinds.length > 0) await conn.query(statement('LISTEN', kinds).join('; '));
      if (!wanted()) {
        await conn.end();
        return;
      }
      client = conn;
      for (const k of kinds) listened.add(k);
      delay = retryMs;
      wakeAll(); // whatever happened before LISTEN took effect was not heard
      sync(); // what was asked for while connecting
    } catch (err) {
      await conn.end().catch(() => undefined);
      if (!wanted()) return;
      logger.warn({ err: (err as Error).message, retryInMs: delay }, 'run change listener could not connect');
      scheduleConnect();
    } finally {
      connecting = undefined;
    }
  };

  /**
   * Makes the connection listen for the kinds wanted now: new ones at once (those who want them
   * are then woken, as changes before LISTEN took effect went unheard), unwanted ones after lingerMs,
   * and on demand, the connection itself once nothing is wanted for lingerMs. One statement at a
   * time; a change of demand meanwhile is looked at once it is done.
   */
  function sync(): void {
    if (syncing) {
      resync = true;
      return;
    }
    const c = client;
    if (!c) return;
    const add = KINDS.filter((k) => wanting[k] > 0 && !listened.has(k));
    const unwanted = KINDS.filter((k) => wanting[k] === 0 && listened.has(k));
    const drop = letGoDue ? unwanted : [];
    letGoDue = false;
    if (drop.length > 0 && !wanted()) {
      client = undefined;
      listened.clear();
      void c.end().catch(() => undefined);
      return;
    }
    if (unwanted.length > drop.length && !lingerTimer) letGoLater(lingerMs);
    if (add.length === 0 && drop.length === 0) return;
    syncing = true;
    c.query([...statement('LISTEN', add), ...statement('UNLISTEN', drop)].join('; ')).then(() => {
      if (client !== c) return;
      for (const k of add) listened.add(k);
      for (const k of drop) listened.delete(k);
      missed(add);
    }, (err: Error) => lost(c, err)).finally(() => {
      syncing = false;
      if (resync) {
        resync = false;
        sync();
      }
    });
  }

  function letGoLater(ms: number): void {
    lingerTimer = setTimeout(() => {
      lingerTimer = undefined;
      const left = releasedAt + lingerMs - Date.now();
      if (left > 0) return letGoLater(left);
      letGoDue = true;
      sync();
    }, ms);
    lingerTimer.unref();
  }
  const release = () => {
    releasedAt = Date.now();
    sync();
  };

  /** Someone waits: listen, unless listening or on the way to it. */
  const demand = () => {
    if (client) sync();
    else if (!connecting && !retryTimer && !closed) connecting = connect();
  };

  function scheduleConnect() {
    if (!wanted() || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (wanted()) connecting = connect();
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
      const w: Watcher = { kinds, latch: createLatch() };
      let set = watchers.get(runId);
      if (!set) watchers.set(runId, (set = new Set()));
      set.add(w);
      want(kinds, 1);
      demand();
      return {
        // After close() no notification comes: a waiter sleeps out its time rather than spinning.
        next: (ms, signal) => w.latch.next(ms, signal),
        close() {
          w.latch.interrupt();
          if (!set.delete(w)) return;
          want(kinds, -1);
          if (set.size === 0 && watchers.get(runId) === set) watchers.delete(runId);
          release();
        },
      };
    },
    onText(runId, listener) {
      let set = textListeners.get(runId);
      if (!set) textListeners.set(runId, (set = new Set()));
      set.add(listener);
      want(['text'], 1);
      demand();
      return () => {
        if (!set.delete(listener)) return;
        want(['text'], -1);
        if (set.size === 0 && textListeners.get(runId) === set) textListeners.delete(runId);
        release();
      };
    },
    onChange(listener, kinds = KINDS.filter((k) => k !== 'text')) {
      const before = listeners.get(listener);
      if (before) want(before, -1);
      listeners.set(listener, kinds);
      want(kinds, 1);
      demand();
      return () => {
        if (listeners.get(listener) !== kinds) return;
        listeners.delete(listener);
        want(kinds, -1);
        release();
      };
    },
    status: () => ({
      listening: client !== undefined,
      pid: (client as unknown as { processID?: number } | undefined)?.processID,
      kinds: KINDS.filter((k) => listened.has(k)),
    }),
    async close() {
      closed = true;
      clearInterval(ping);
      clearTimeout(retryTimer);
      clearTimeout(lingerTimer);
      await connecting;
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
      wakeAll();
    },
  };
}

/**
 * A worker's feed: its tool calls watch answers to MCP servers' questions alone (`input`), so that
 * is all it listens for, and only while a tool call waits for one.
 */
export function listenForAnswers(db: Db, logger: Logger): RunChangeFeed {
  return listenForRunChanges(db, logger, { onDemand: true });
}
