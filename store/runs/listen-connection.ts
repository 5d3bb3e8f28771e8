import pg from 'pg';
import type { Logger } from '../../platform/logger';
import type { Db } from '../pool';
import { changeOfChannel, channelStatements, RUN_CHANGES } from './change-channels';
import type { RunChangeSubscribers } from './change-subscribers';
import { LetGoTimer } from './let-go-timer';
import type { RunChange, RunChangeFeed, RunChangeFeedOptions } from './run-changes';

/**
 * The process's one LISTEN connection (change-feed.ts), beside the pool: it listens for the kinds
 * the subscribers want, reconnects when lost, and wakes the subscribers whenever notifications may
 * have gone unheard (the connection was lost, or has just begun to listen for a kind).
 */
export class ListenConnection {
  private client: pg.Client | undefined;
  private closed = false;
  private delay: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private connecting: Promise<void> | undefined;
  /** the kinds the connection has been told to LISTEN for, once PostgreSQL has confirmed it */
  private readonly listened = new Set<RunChange>();
  private readonly linger: LetGoTimer;
  private syncing = false;
  private resync = false;
  private readonly ping: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly subscribers: RunChangeSubscribers,
    private readonly options: RunChangeFeedOptions,
  ) {
    this.delay = this.retryMs;
    this.linger = new LetGoTimer(options.lingerMs ?? 30_000, () => this.sync());
    this.ping = setInterval(() => this.pingConnection(), options.pingMs ?? 30_000);
    this.ping.unref();
    if (!options.onDemand) this.connecting = this.connect();
  }

  /** Someone waits: listen, unless listening or on the way to it. */
  demand(): void {
    if (this.client) this.sync();
    else if (!this.connecting && !this.retryTimer && !this.closed) this.connecting = this.connect();
  }

  /** A watch or a listener went: what nobody wants any more is let go of lingerMs after the last one went. */
  release(): void {
    this.linger.released();
    this.sync();
  }

  status(): ReturnType<RunChangeFeed['status']> {
    return {
      listening: this.client !== undefined,
      pid: (this.client as unknown as { processID?: number } | undefined)?.processID,
      kinds: RUN_CHANGES.filter((kind) => this.listened.has(kind)),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.ping);
    clearTimeout(this.retryTimer);
    this.linger.stop();
    await this.connecting;
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
    this.subscribers.missed(RUN_CHANGES);
  }

  private get retryMs(): number {
    return this.options.retryMs ?? 250;
  }

  private wanted(): boolean {
    return !this.closed && (!this.options.onDemand || this.subscribers.wantedKinds().length > 0);
  }

  private async connect(): Promise<void> {
    // A connection of its own, beside the pool: it is held for the process's lifetime and must not take a pooled slot.
    const conn = new pg.Client({ ...this.db.options, application_name: 'engine-run-changes' });
    try {
      conn.on('notification', (msg) => this.onNotification(msg));
      conn.on('error', (err) => this.lost(conn, err));
      conn.on('end', () => this.lost(conn));
      await conn.connect();
      await this.listenFirst(conn);
    } catch (err) {
      await conn.end().catch(() => undefined);
      if (!this.wanted()) return;
      this.logger.warn({ err: (err as Error).message, retryInMs: this.delay }, 'run change listener could not connect');
      this.scheduleConnect();
    } finally {
      this.connecting = undefined;
    }
  }

  /** On a new connection: LISTEN for what is wanted, then keep it, unless nothing is wanted any more. */
  private async listenFirst(conn: pg.Client): Promise<void> {
    const kinds = this.subscribers.wantedKinds();
    if (kinds.length > 0) await conn.query(channelStatements('LISTEN', kinds).join('; '));
    if (!this.wanted()) {
      await conn.end();
      return;
    }
    this.client = conn;
    for (const kind of kinds) this.listened.add(kind);
    this.delay = this.retryMs;
    this.subscribers.missed(RUN_CHANGES); // whatever happened before LISTEN took effect was not heard
    this.sync(); // what was asked for while connecting
  }

  private onNotification(msg: pg.Notification): void {
    const kind = changeOfChannel(msg.channel);
    if (kind && msg.payload) this.subscribers.heard(kind, msg.payload);
  }

  private pingConnection(): void {
    const c = this.client;
    c?.query('SELECT 1').catch((err: Error) => this.lost(c, err));
  }

  private lost(c: pg.Client, err?: Error): void {
    if (this.client !== c) return;
    this.forget(c);
    if (this.wanted()) this.logger.warn({ err: err?.message }, 'run change listener lost its connection; reconnecting');
    this.subscribers.missed(RUN_CHANGES);
    this.scheduleConnect();
  }

  private forget(c: pg.Client): void {
    this.client = undefined;
    this.listened.clear();
    void c.end().catch(() => undefined);
  }

  private scheduleConnect(): void {
    if (!this.wanted() || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.wanted()) this.connecting = this.connect();
    }, this.delay);
    this.retryTimer.unref();
    this.delay = Math.min(this.delay * 2, 5_000);
  }

  /**
   * Makes the connection listen for the kinds wanted now: new ones at once (those who want them
   * are then woken, as changes before LISTEN took effect went unheard), unwanted ones after lingerMs,
   * and on demand, the connection itself once nothing is wanted for lingerMs.
   */
  private sync(): void {
    if (this.syncing) {
      this.resync = true;
      return;
    }
    const c = this.client;
    if (!c) return;
    const wanted = new Set(this.subscribers.wantedKinds());
    const add = RUN_CHANGES.filter((kind) => wanted.has(kind) && !this.listened.has(kind));
    const unwanted = RUN_CHANGES.filter((kind) => !wanted.has(kind) && this.listened.has(kind));
    const drop = this.linger.takeDue() ? unwanted : [];
    if (drop.length > 0 && !this.wanted()) return this.forget(c);
    if (unwanted.length > drop.length) this.linger.arm();
    if (add.length > 0 || drop.length > 0) this.alter(c, add, drop);
  }

  /** One statement at a time; a change of demand meanwhile is looked at once it is done. */
  private alter(c: pg.Client, add: RunChange[], drop: RunChange[]): void {
    this.syncing = true;
    c.query([...channelStatements('LISTEN', add), ...channelStatements('UNLISTEN', drop)].join('; ')).then(() => {
      if (this.client !== c) return;
      for (const kind of add) this.listened.add(kind);
      for (const kind of drop) this.listened.delete(kind);
      this.subscribers.missed(add);
    }, (err: Error) => this.lost(c, err)).finally(() => {
      this.syncing = false;
      if (this.resync) {
        this.resync = false;
        this.sync();
      }
    });
  }
}
