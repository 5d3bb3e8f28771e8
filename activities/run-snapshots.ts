import type { Queryable } from '../core/db/pool';
import { getSnapshotWithBytes } from '../core/db/run-store';
import type { DiscoveredIntegration } from '../core/mcp/discover';
import type { ChatMessage } from '../core/messages';

/**
 * What a run takes once at its start and every later step reads by reference: the integrations'
 * capabilities (discovery) and the injected prefix. A retry or a replay never sees other text.
 */
export const SNAPSHOT = { discovery: 'discovery', prefix: 'prefix' } as const;

export interface DiscoverySnapshot {
  integrations: (DiscoveredIntegration & { exposedToolNames: string[] })[];
}

export interface PrefixSnapshot {
  messages: ChatMessage[];
  /** how many of the servers' conventional prompts made it into the messages */
  injectedPrompts: number;
}

/**
 * Snapshots are written while a run prepares and only read once its turns begin, so a worker keeps
 * those it has read for the turns and tool calls that follow (every turn reads both). Bounded by
 * their stored size; the least recently read go first. Run ids are unique, so one cache serves the process.
 */
const CACHE_BYTES = 16 * 1024 * 1024;
const cached = new Map<string, { data: unknown; bytes: number }>();
let cachedBytes = 0;

/** A snapshot, for the steps after preparation (preparation itself reads and writes the database). */
export async function readSnapshot<T>(db: Queryable, runId: string, kind: keyof typeof SNAPSHOT): Promise<T | undefined> {
  const key = `${runId} ${kind}`;
  const hit = cached.get(key);
  if (hit) {
    cached.delete(key);
    cached.set(key, hit);
    return hit.data as T;
  }
  const row = await getSnapshotWithBytes<T>(db, runId, kind);
  // A missing snapshot is not remembered; one larger than an eighth of the cache is read each time.
  if (row && row.bytes <= CACHE_BYTES / 8) {
    cached.set(key, row);
    cachedBytes += row.bytes;
    for (const [k, v] of cached) {
      if (cachedBytes <= CACHE_BYTES) break;
      cached.delete(k);
      cachedBytes -= v.bytes;
    }
  }
  return row?.data;
}

export async function runIntegrations(db: Queryable, runId: string): Promise<DiscoverySnapshot['integrations']> {
  return (await readSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery))?.integrations ?? [];
}
