import type { Logger } from '../../platform/logger';
import type { Db } from '../pool';
import { RUN_CHANGES } from './change-channels';
import { RunChangeSubscribers, type ChangeListener, type TextListener } from './change-subscribers';
import { ListenConnection } from './listen-connection';
import type { RunChange, RunChangeFeed, RunChangeFeedOptions, RunWatch } from './run-changes';

export type { RunChange, RunChangeFeed, RunChangeFeedOptions, RunWatch } from './run-changes';

/**
 * Run changes pushed by PostgreSQL (the triggers of migrations 5, 7 and 9; change-channels.ts), fanned
 * out to the requests that wait on them: one LISTEN connection per process, however many long polls
 * and event streams are open. A waiter only learns "this run may have changed" and re-reads the
 * database, so a lost or duplicated notification costs at most one extra read.
 *
 * When the connection drops, every waiter is woken (it re-reads, then waits again) and the feed
 * reconnects; once listening again it wakes everyone once more, because notifications sent while
 * it was away are lost.
 */
export function listenForRunChanges(db: Db, logger: Logger, options: RunChangeFeedOptions = {}): RunChangeFeed {
  const subscribers = new RunChangeSubscribers();
  return new PgRunChangeFeed(subscribers, new ListenConnection(db, logger, subscribers, options));
}

/**
 * A worker's feed: its tool calls watch answers to MCP servers' questions alone (`input`), so that
 * is all it listens for, and only while a tool call waits for one.
 */
export function listenForAnswers(db: Db, logger: Logger): RunChangeFeed {
  return listenForRunChanges(db, logger, { onDemand: true });
}

/** Each subscription asks the connection for its kinds; each departure lets it go of them in time. */
class PgRunChangeFeed implements RunChangeFeed {
  constructor(private readonly subscribers: RunChangeSubscribers, private readonly connection: ListenConnection) {}

  watch(runId: string, kinds: readonly RunChange[]): RunWatch {
    const { latch, remove } = this.subscribers.watch(runId, kinds);
    this.connection.demand();
    return {
      // After close() no notification comes: a waiter sleeps out its time rather than spinning.
      next: (ms, signal) => latch.next(ms, signal),
      close: () => {
        latch.interrupt();
        if (remove()) this.connection.release();
      },
    };
  }

  onText(runId: string, listener: TextListener): () => void {
    return this.subscribed(this.subscribers.onText(runId, listener));
  }

  onChange(listener: ChangeListener, kinds: readonly RunChange[] = RUN_CHANGES.filter((kind) => kind !== 'text' && kind !== 'keys')):
    () => void {
    return this.subscribed(this.subscribers.onChange(listener, kinds));
  }

  status(): ReturnType<RunChangeFeed['status']> {
    return this.connection.status();
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  private subscribed(remove: () => boolean): () => void {
    this.connection.demand();
    return () => {
      if (remove()) this.connection.release();
    };
  }
}
