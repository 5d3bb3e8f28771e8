import type { TextPiece } from './turn-drafts';

/** The kinds of run change a process can wait for, and the feed that tells it of them (change-feed.ts). */

export type RunChange = 'event' | 'progress' | 'ended' | 'input' | 'text' | 'keys';

export interface RunWatch {
  /** Resolves on a change of the watched kinds since the last call (at once if one came meanwhile), after `ms`, or on abort. */
  next(ms: number, signal?: AbortSignal): Promise<void>;
  close(): void;
}

export interface RunChangeFeed {
  /** Watch before reading the run: a change between the read and next() is then not missed. */
  watch(runId: string, kinds: readonly RunChange[]): RunWatch;
  /**
   * Every change of the given kinds (default: all but `text` and `keys`) as it is heard: the run's id and the kind of
   * change, or undefined when changes may have been missed (the connection was lost, or has just
   * been made, or has just begun to listen for one of these kinds). Returns the unsubscribe function.
   */
  onChange(listener: (runId: string | undefined, kind?: RunChange) => void, kinds?: readonly RunChange[]): () => void;
  /**
   * The pieces of the run's turn texts as they are heard (listened for only while someone wants
   * them); undefined when some may have been missed. Returns the unsubscribe function.
   */
  onText(runId: string, listener: (piece: TextPiece | undefined) => void): () => void;
  /** the LISTEN connection and the kinds of change it listens for, for health checks and tests */
  status(): { listening: boolean; pid?: number; kinds: RunChange[] };
  close(): Promise<void>;
}

export interface RunChangeFeedOptions {
  /** first reconnect delay; it doubles up to 5 s */
  retryMs?: number;
  /** a round trip on the idle LISTEN connection, so that a silently dead one is noticed */
  pingMs?: number;
  /**
   * Hold the connection only while someone waits (a watch or an onChange listener): it goes when
   * the last kind is let go of (default: for the feed's whole life). PostgreSQL wakes every
   * LISTENing backend of the database at each NOTIFY, whatever its channels: a worker, which waits
   * for answers rarely, must not be woken by every step of every run.
   */
  onDemand?: boolean;
  /**
   * A kind of change is listened for only while a watch or a listener wants it, so PostgreSQL
   * sends the process no notification nobody waits for: step starts (`progress`, about half of
   * what a run NOTIFYs) reach an API process only while one of its event streams follows a run,
   * not for every run its long polls and cache wait on. A kind nobody wants any more is let go of
   * after `lingerMs` (default 30 s), so that streams opened one after another do not each cost a LISTEN.
   */
  lingerMs?: number;
}
