import type { Queryable } from '../store/pool';
import { getSnapshotWithBytes } from '../store/runs/snapshots';
import { threadHistoryWithBytes } from '../store/threads/threads';
import type { DiscoveredIntegration } from '../core/discovery';
import type { ChatMessage } from '../core/messages';

/**
 * What a run takes once at its start and every later step reads by reference: the integrations'
 * capabilities (discovery) and the injected prefix. A retry or a replay never sees other text.
 */
export const SNAPSHOT = { discovery: 'discovery', prefix: 'prefix', prepared: 'prepared' } as const;

export interface DiscoverySnapshot {
  integrations: (DiscoveredIntegration & { exposedToolNames: string[] })[];
}

export interface PrefixSnapshot {
  messages: ChatMessage[];
  /** how many of the servers' conventional prompts made it into the messages */
  injectedPrompts: number;
  /** the agent's instructions in the messages (absent in runs prepared before replays: mcp-client/prefix-instructions.ts) */
  instructions?: string | null;
}

/**
 * Snapshots are written while a run prepares and only read once its turns begin, so a worker keeps
 * those it has read for the turns and tool calls that follow (every turn reads both). The thread's
 * history before the run is fixed too while the run is its thread's active run. Bounded by their
 * stored size; the least recently read go first. Run ids are unique, so one cache serves the process.
 */
const CACHE_BYTES = 16 * 1024 * 1024;
const cached = new Map<string, { data: unknown; bytes: number }>();
let cachedBytes = 0;

function remember(key: string, row: { data: unknown; bytes: number }): void {
  // One larger than an eighth of the cache is read each time.
  if (row.bytes > CACHE_BYTES / 8) return;
  const before = cached.get(key);
  if (before) cachedBytes -= before.bytes;
  cached.delete(key);
  cached.set(key, row);
  cachedBytes += row.bytes;
  for (const [k, v] of cached) {
    if (cachedBytes <= CACHE_BYTES) break;
    cached.delete(k);
    cachedBytes -= v.bytes;
  }
}

async function remembered<T>(key: string, load: () => Promise<{ data: T; bytes: number } | undefined>): Promise<T | undefined> {
  const hit = cached.get(key);
  if (hit) {
    cached.delete(key);
    cached.set(key, hit);
    return hit.data as T;
  }
  const row = await load();
  // A missing row is not remembered.
  if (row) remember(key, row);
  return row?.data;
}

/**
 * What a run's preparation has just written or read, kept for the turns that follow on this worker:
 * its first turn, which runs in the same activity, then reads none of it from the database.
 */
export function rememberPrepared(runId: string, known: {
  /** absent while workers of pinned integrations' queues still add to it */
  discovery?: { data: DiscoverySnapshot; bytes: number };
  prefix: { data: PrefixSnapshot; bytes: number };
  history: { data: ChatMessage[]; bytes: number };
}): void {
  if (known.discovery) remember(`${runId} ${SNAPSHOT.discovery}`, known.discovery);
  remember(`${runId} ${SNAPSHOT.prefix}`, known.prefix);
  remember(`${runId} history`, known.history);
}

/** A snapshot, for the steps after preparation (preparation itself reads and writes the database). */
export async function readSnapshot<T>(db: Queryable, runId: string, kind: keyof typeof SNAPSHOT): Promise<T | undefined> {
  return remembered(`${runId} ${kind}`, () => getSnapshotWithBytes<T>(db, runId, kind));
}

/** The messages of the run's thread before the run: what every turn puts before the run's own transcript. */
export async function threadHistory(db: Queryable, runId: string, threadId: string): Promise<ChatMessage[]> {
  return (await remembered(`${runId} history`, () => threadHistoryWithBytes(db, threadId))) ?? [];
}

export async function runIntegrations(db: Queryable, runId: string): Promise<DiscoverySnapshot['integrations']> {
  return (await readSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery))?.integrations ?? [];
}
