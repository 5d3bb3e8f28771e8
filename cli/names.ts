import type { ApiClient } from './api-client';

/**
 * The name to print for an id; an id whose name could not be read (deleted since, a failed lookup)
 * stays the id.
 */
export type NameOf = (id: string) => string;

const nameOf = (names: Map<string, string>): NameOf => (id) => names.get(id) ?? id;

/**
 * The names of agents: of several, from one list; an agent missing from it (deleted, kept for its
 * runs), or a single one, is read on its own. Printing a run must not fail because a name could not
 * be read: the id is printed then.
 */
export async function agentNames(api: ApiClient, ids: string[]): Promise<NameOf> {
  const wanted = [...new Set(ids)];
  const names = new Map<string, string>();
  if (wanted.length > 1) {
    const { agents } = await api.get<{ agents: { id: string; name: string }[] }>('/v1/agents').catch(() => ({ agents: [] }));
    for (const a of agents) names.set(a.id, a.name);
  }
  await Promise.all(wanted.filter((id) => !names.has(id)).map(async (id) => {
    const agent = await api.get<{ name: string }>(`/v1/agents/${encodeURIComponent(id)}`).catch(() => undefined);
    if (agent) names.set(id, agent.name);
  }));
  return nameOf(names);
}

/** The names of integrations, from one list (a deleted integration is gone: its id is printed). */
export async function integrationNames(api: ApiClient, ids: string[]): Promise<NameOf> {
  const names = new Map<string, string>();
  if (ids.length === 0) return nameOf(names);
  const { integrations } = await api.get<{ integrations: { id: string; name: string }[] }>('/v1/integrations')
    .catch(() => ({ integrations: [] }));
  for (const i of integrations) names.set(i.id, i.name);
  return nameOf(names);
}
