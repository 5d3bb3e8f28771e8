import type { Client } from '@modelcontextprotocol/client';

/**
 * A connection's capability lists, kept between runs while its server has promised to say when
 * they change. A server that declares `listChanged` for tools, resources or prompts sends
 * notifications/<kind>/list_changed when that list changes (MCP's lifecycle): until then, a run's
 * discovery reads the kept list instead of asking again (three or four requests per run, each a
 * round trip and a schema-heavy answer). A server that declares no such promise is asked every time.
 *
 * A list asked for before a change notification arrived is not kept, and nothing is kept longer
 * than MAX_AGE_MS, which bounds what a server that forgets to notify can leave stale. A new
 * connection (reconnect, changed integration) starts empty: the lists hang on the client object.
 */

export type ListKind = 'tools' | 'resources' | 'prompts';

const MAX_AGE_MS = 60_000;

interface ConnectionLists {
  /** bumped by each change notification: a list asked for under an older generation is stale */
  generation: Record<ListKind, number>;
  kept: Map<string, { kind: ListKind; value: unknown; at: number }>;
  /** others told of each change notification (a client takes one handler per notification) */
  listeners: Record<ListKind, (() => void)[]>;
}

const byClient = new WeakMap<Client, ConnectionLists>();

function listsOf(client: Client): ConnectionLists {
  const known = byClient.get(client);
  if (known) return known;
  const lists: ConnectionLists = {
    generation: { tools: 0, resources: 0, prompts: 0 },
    kept: new Map(),
    listeners: { tools: [], resources: [], prompts: [] },
  };
  const changed = (kind: ListKind) => () => {
    lists.generation[kind] += 1;
    for (const [key, entry] of lists.kept) if (entry.kind === kind) lists.kept.delete(key);
    for (const listener of lists.listeners[kind]) listener();
  };
  client.setNotificationHandler('notifications/tools/list_changed', changed('tools'));
  client.setNotificationHandler('notifications/resources/list_changed', changed('resources'));
  client.setNotificationHandler('notifications/prompts/list_changed', changed('prompts'));
  byClient.set(client, lists);
  return lists;
}

/** Calls `listener` at each notifications/<kind>/list_changed the client's server sends (mcp-client/prompt-cache.ts). */
export function onListChanged(client: Client, kind: ListKind, listener: () => void): void {
  listsOf(client).listeners[kind].push(listener);
}

/**
 * `list()`'s answer, asked once per change of the `kind` list when the server declared
 * listChanged for it (`key` names one list of that kind: resources and resource templates are
 * both announced by resources/list_changed). Failures are never kept. The caller must not change
 * the answer: later runs read the same object.
 */
export async function keptList<T>(client: Client, kind: ListKind, key: string, list: () => Promise<T>): Promise<T> {
  if (!client.getServerCapabilities()?.[kind]?.listChanged) return list();
  const lists = listsOf(client);
  const hit = lists.kept.get(key);
  if (hit && Date.now() - hit.at < MAX_AGE_MS) return hit.value as T;
  const generation = lists.generation[kind];
  const value = await list();
  if (lists.generation[kind] === generation) lists.kept.set(key, { kind, value, at: Date.now() });
  return value;
}
