import { createLatch, type Latch } from '../../platform/latch';
import { RUN_CHANGES } from './change-channels';
import { parseTextPieces, type TextPiece } from './turn-drafts';
import type { RunChange } from './run-changes';

export type ChangeListener = (runId: string | undefined, kind?: RunChange) => void;
export type TextListener = (piece: TextPiece | undefined) => void;

interface Watcher { kinds: readonly RunChange[]; latch: Latch }

/**
 * Who waits for which run changes in this process (watches, listeners, text listeners), and how
 * many want each kind: what the LISTEN connection listens for. Each `remove` says whether the
 * subscriber was still there, so that the connection is told of a departure once.
 */
export class RunChangeSubscribers {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly listeners = new Map<ChangeListener, readonly RunChange[]>();
  private readonly textListeners = new Map<string, Set<TextListener>>();
  /** how many watches and listeners want each kind */
  private readonly wanting: Record<RunChange, number> = { event: 0, progress: 0, ended: 0, input: 0, text: 0, keys: 0 };

  wantedKinds(): RunChange[] {
    return RUN_CHANGES.filter((kind) => this.wanting[kind] > 0);
  }

  watch(runId: string, kinds: readonly RunChange[]): { latch: Latch; remove: () => boolean } {
    const watcher: Watcher = { kinds, latch: createLatch() };
    const removeWatcher = addTo(this.watchers, runId, watcher);
    this.want(kinds, 1);
    return { latch: watcher.latch, remove: () => removeWatcher() && this.unwant(kinds) };
  }

  onText(runId: string, listener: TextListener): () => boolean {
    const removeListener = addTo(this.textListeners, runId, listener);
    this.want(['text'], 1);
    return () => removeListener() && this.unwant(['text']);
  }

  /** A listener added again replaces its kinds; only the latest subscription's remove takes it out. */
  onChange(listener: ChangeListener, kinds: readonly RunChange[]): () => boolean {
    const before = this.listeners.get(listener);
    if (before) this.want(before, -1);
    this.listeners.set(listener, kinds);
    this.want(kinds, 1);
    return () => {
      if (this.listeners.get(listener) !== kinds) return false;
      this.listeners.delete(listener);
      return this.unwant(kinds);
    };
  }

  /** A notification of `kind`: its payload is the run's id, or for `text` the pieces. */
  heard(kind: RunChange, payload: string): void {
    if (kind === 'text') {
      for (const piece of parseTextPieces(payload)) for (const listener of this.textListeners.get(piece.runId) ?? []) listener(piece);
      return;
    }
    for (const [listener, own] of this.listeners) if (own.includes(kind)) listener(payload, kind);
    for (const watcher of this.watchers.get(payload) ?? []) if (watcher.kinds.includes(kind)) watcher.latch.poke();
  }

  /** Tells those who want any of `kinds` that changes of them may have gone unheard. */
  missed(kinds: readonly RunChange[]): void {
    const wants = (own: readonly RunChange[]) => own.some((kind) => kinds.includes(kind));
    if (kinds.includes('text')) for (const set of this.textListeners.values()) for (const listener of set) listener(undefined);
    for (const [listener, own] of this.listeners) if (wants(own)) listener(undefined);
    for (const set of this.watchers.values()) for (const watcher of set) if (wants(watcher.kinds)) watcher.latch.poke();
  }

  private want(kinds: readonly RunChange[], by: 1 | -1): void {
    for (const kind of new Set(kinds)) this.wanting[kind] += by;
  }

  private unwant(kinds: readonly RunChange[]): true {
    this.want(kinds, -1);
    return true;
  }
}

/** Adds `item` to the set under `key`; the returned function takes it out (false if already out), and the set once empty. */
function addTo<K, V>(sets: Map<K, Set<V>>, key: K, item: V): () => boolean {
  let set = sets.get(key);
  if (!set) sets.set(key, (set = new Set()));
  const own = set;
  own.add(item);
  return () => {
    if (!own.delete(item)) return false;
    if (own.size === 0 && sets.get(key) === own) sets.delete(key);
    return true;
  };
}
