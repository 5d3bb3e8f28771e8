import type { Queryable } from '../core/db/pool';
import { getSnapshot } from '../core/db/run-store';
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

export async function runIntegrations(db: Queryable, runId: string): Promise<DiscoverySnapshot['integrations']> {
  return (await getSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery))?.integrations ?? [];
}
