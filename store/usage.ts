import type { Queryable } from './pool';

/*
 * Spend and tokens summed over completed LLM turns (run_turns, migration 31) and MCP servers'
 * sampling requests the run's model answered (run_samplings, migration 34), by agent, model or
 * tenant, for GET /v1/usage. One without a cost was not priced: a group with one says so.
 */

/** What the model answered in the range: turns by their completion, sampling answers by theirs. */
const ANSWERS = `
  SELECT run_id, 'turn' AS kind, input_tokens, cached_input_tokens, output_tokens, provider, model, cost_usd
  FROM run_turns WHERE completed_at >= $1 AND completed_at < $2
  UNION ALL
  SELECT run_id, 'sampling', (usage->>'inputTokens')::int, coalesce((usage->>'cachedInputTokens')::int, 0),
    (usage->>'outputTokens')::int, provider, model, cost_usd
  FROM run_samplings WHERE status = 'answered' AND resolved_at >= $1 AND resolved_at < $2 AND usage IS NOT NULL`;

export type UsageGroupBy = 'agent' | 'model' | 'tenant';

export interface UsageRow {
  key: string;
  /** the agent's name, for groupBy agent */
  name?: string;
  turns: number;
  /** sampling requests of MCP servers the model answered */
  samplings: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  usd: number;
  priced: boolean;
}

const KEYS: Record<UsageGroupBy, { key: string; name: string }> = {
  agent: { key: 'r.agent_id', name: '(SELECT a.name FROM agents a WHERE a.id = r.agent_id)' },
  model: { key: "coalesce(t.provider || '/' || t.model, 'unknown')", name: 'NULL' },
  tenant: { key: 'r.tenant_id', name: '(SELECT n.name FROM tenants n WHERE n.id = r.tenant_id)' },
};

/** The groups of turns completed in [from, to), of one tenant or of all, at most `limit`, by key. */
export async function usageGroups(
  db: Queryable, q: { groupBy: UsageGroupBy; from: string; to: string; tenantId: string | undefined; limit: number },
): Promise<UsageRow[]> {
  const { key, name } = KEYS[q.groupBy];
  const { rows } = await db.query<{
    key: string; name: string | null; turns: number; samplings: number; input: string; cached: string; output: string; usd: string;
    priced: boolean;
  }>(
    `SELECT ${key} AS key, min(${name}) AS name, count(*) FILTER (WHERE t.kind = 'turn')::int AS turns,
       count(*) FILTER (WHERE t.kind = 'sampling')::int AS samplings, sum(t.input_tokens)::text AS input,
       sum(t.cached_input_tokens)::text AS cached, sum(t.output_tokens)::text AS output,
       coalesce(sum(t.cost_usd), 0)::text AS usd, bool_and(t.cost_usd IS NOT NULL) AS priced
     FROM (${ANSWERS}) t JOIN runs r ON r.id = t.run_id
     WHERE ($3::text IS NULL OR r.tenant_id = $3)
     GROUP BY 1 ORDER BY 1 LIMIT $4`,
    [q.from, q.to, q.tenantId ?? null, q.limit],
  );
  return rows.map((r) => ({
    key: r.key, ...(r.name !== null ? { name: r.name } : {}), turns: r.turns, samplings: r.samplings,
    inputTokens: Number(r.input),
    cachedInputTokens: Number(r.cached), outputTokens: Number(r.output), usd: Number(r.usd), priced: r.priced,
  }));
}
