import type { Client } from '@modelcontextprotocol/client';
import type { Integration } from '../core/integration';
import { onListChanged } from './list-cache';

/**
 * Conventional prompts' contents, kept for integrations with a `promptCacheTtl` (opt-in): per
 * (integration, prompt name, arguments) until the TTL ends or the server sends
 * notifications/prompts/list_changed. Integrations without the setting are asked every time.
 *
 * In this worker process, not in PostgreSQL: the change notification arrives on one worker's
 * connection, and an in-process cache drops what that connection's server changed at once, with
 * no race between a notification on one worker and a fetch on another. A stdio server runs once
 * per worker anyway. Prompt texts, which a server may tailor to the integration's credentials,
 * are not copied into another table. The cost: each worker fetches once per TTL.
 *
 * Keys carry the integration's updatedAt: a changed integration (new arguments, env, TTL) starts
 * afresh. A fetch answered after a change notification is not kept. Entries are bounded in number
 * and size; the oldest go first.
 */

const MAX_ENTRIES = 1000;
/** A content larger than this is fetched each time rather than held in memory. */
const MAX_CONTENT_CHARS = 256 * 1024;

const kept = new Map<string, { integrationId: string; content: string; expiresAt: number }>();
/** bumped by each change notification of the integration's server: a fetch begun under an older one is not kept */
const generations = new Map<string, number>();
const watched = new WeakSet<Client>();

const keyOf = (integration: Integration, name: string, args: Record<string, string>) =>
  JSON.stringify([integration.id, integration.updatedAt, name, Object.entries(args).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);

/** Forgets every content kept for the integration. */
export function forgetPrompts(integrationId: string): void {
  generations.set(integrationId, (generations.get(integrationId) ?? 0) + 1);
  for (const [key, entry] of kept) if (entry.integrationId === integrationId) kept.delete(key);
}

function watch(client: Client, integrationId: string): void {
  if (watched.has(client)) return;
  watched.add(client);
  onListChanged(client, 'prompts', () => forgetPrompts(integrationId));
}

/**
 * The content of a prompt: `fetch()`'s, or the one kept from an earlier fetch while the
 * integration's promptCacheTtl lasts. `cached` says which.
 */
export async function cachedPromptContent(
  client: Client, integration: Integration, name: string, args: Record<string, string>, fetch: () => Promise<string>,
): Promise<{ content: string; cached: boolean }> {
  const ttl = integration.promptCacheTtlMs;
  if (!ttl) return { content: await fetch(), cached: false };
  watch(client, integration.id);
  const key = keyOf(integration, name, args);
  const hit = kept.get(key);
  if (hit && hit.expiresAt > Date.now()) return { content: hit.content, cached: true };
  if (hit) kept.delete(key);
  const generation = generations.get(integration.id) ?? 0;
  const content = await fetch();
  if ((generations.get(integration.id) ?? 0) === generation && content.length <= MAX_CONTENT_CHARS) {
    kept.set(key, { integrationId: integration.id, content, expiresAt: Date.now() + ttl });
    for (const oldest of kept.keys()) {
      if (kept.size <= MAX_ENTRIES) break;
      kept.delete(oldest);
    }
  }
  return { content, cached: false };
}
