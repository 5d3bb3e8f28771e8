import { inTransaction, type Db, type Queryable } from './pool';

/** The agent graph of sub-agents (agents.sub_agent_ids), for the checks made when an agent is saved or deleted. */

export interface ResolvedAgent {
  id: string;
  name: string;
  description: string | null;
  disabled: boolean;
  /** whether the agent has integrations (read with the sub-agents of a run only) */
  hasIntegrations?: boolean;
}

interface AgentRefRow { id: string; name: string; description: string | null; disabled_at: Date | null; has_integrations?: boolean }

const toResolved = (r: AgentRefRow): ResolvedAgent => ({
  id: r.id, name: r.name, description: r.description, disabled: r.disabled_at !== null,
  ...(r.has_integrations ? { hasIntegrations: true } : {}),
});

/**
 * The tenant's agents `refs` name (ids or names; an id wins over an equal name), in the order given;
 * a ref that names none of them (another tenant's included) is left out of `found` and listed in `unknown`.
 */
export async function resolveAgentRefs(
  db: Queryable, tenantId: string, refs: string[],
): Promise<{ found: ResolvedAgent[]; unknown: string[] }> {
  if (refs.length === 0) return { found: [], unknown: [] };
  const { rows } = await db.query<AgentRefRow>(
    'SELECT id, name, description, disabled_at FROM agents WHERE tenant_id = $2 AND (id = ANY($1) OR name = ANY($1))',
    [refs, tenantId],
  );
  const found: ResolvedAgent[] = [];
  const unknown: string[] = [];
  for (const ref of refs) {
    const row = rows.find((r) => r.id === ref) ?? rows.find((r) => r.name === ref);
    if (row) found.push(toResolved(row));
    else unknown.push(ref);
  }
  return { found, unknown };
}

/** Whether `agentId` is reachable from `subAgentIds` through sub-agents: listing them would close a cycle. */
export async function closesSubAgentCycle(db: Queryable, agentId: string, subAgentIds: string[]): Promise<boolean> {
  const { rows } = await db.query<{ cycle: boolean }>(
    `WITH RECURSIVE reach(id) AS (
       SELECT unnest($2::text[])
       UNION SELECT unnest(a.sub_agent_ids) FROM agents a JOIN reach r ON a.id = r.id)
     SELECT EXISTS (SELECT 1 FROM reach WHERE id = $1) AS cycle`, [agentId, subAgentIds]);
  return rows[0].cycle;
}

/** The names of the enabled agents that list `agentId` as a sub-agent. */
export async function agentsListing(db: Queryable, agentId: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    'SELECT name FROM agents WHERE $1 = ANY(sub_agent_ids) AND disabled_at IS NULL ORDER BY name', [agentId]);
  return rows.map((r) => r.name);
}

/** The sub-agents of a run's agent, as its tools are described: names and descriptions, by id, in the agent's order. */
export async function subAgentsByIds(db: Queryable, ids: string[]): Promise<ResolvedAgent[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<AgentRefRow>(
    'SELECT id, name, description, disabled_at, cardinality(integration_ids) > 0 AS has_integrations FROM agents WHERE id = ANY($1)',
    [ids],
  );
  return ids.flatMap((id) => {
    const r = rows.find((row) => row.id === id);
    return r ? [toResolved(r)] : [];
  });
}

export interface NewChildRun {
  runId: string;
  threadId: string;
  parentRunId: string;
  parentToolCallId: string;
  rootRunId: string;
  agentId: string;
  input: string;
  /** runs the root may have below it */
  maxDescendants: number;
}

/**
 * A sub-agent's run on a new thread of its parent's tenant, started by whoever started the parent,
 * in one statement: the thread (held by the run) and the run,
 * unless the root run has its most descendants already (full) or the agent is disabled. Ids
 * come from the parent's call, so a retried activity finds the run it recorded before.
 */
export async function insertChildRun(
  db: Db, c: NewChildRun,
): Promise<{ runId: string; threadId: string; agentId: string } | { refused: 'full' | 'disabled' }> {
  // One child of a tree at a time: siblings started at once must not both see room for one.
  const { rows } = await inTransaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`sub-agents:${c.rootRunId}`]);
    return tx.query<{ run: { id: string; thread_id: string; agent_id: string } | null; room: boolean }>(
    `WITH existing AS (SELECT id, thread_id, agent_id FROM runs WHERE id = $1),
     room AS (SELECT count(*) < $8 AS ok FROM runs WHERE root_run_id = $5),
     parent AS (SELECT tenant_id, started_by FROM runs WHERE id = $3),
     thread AS (
       INSERT INTO threads (id, agent_id, active_run_id, tenant_id)
       SELECT $2, a.id, $1, parent.tenant_id FROM agents a, room, parent
       WHERE a.id = $6 AND a.disabled_at IS NULL AND room.ok AND NOT EXISTS (SELECT 1 FROM existing)
       RETURNING id, agent_id),
     run AS (
       INSERT INTO runs (id, thread_id, agent_id, input, parent_run_id, parent_tool_call_id, root_run_id, tenant_id, started_by)
       SELECT $1, thread.id, thread.agent_id, $7, $3, $4, $5, parent.tenant_id, parent.started_by FROM thread, parent
       RETURNING id, thread_id, agent_id)
     SELECT (SELECT row_to_json(x) FROM (SELECT * FROM run UNION ALL SELECT * FROM existing) x LIMIT 1) AS run,
       (SELECT ok FROM room) AS room`,
    [c.runId, c.threadId, c.parentRunId, c.parentToolCallId, c.rootRunId, c.agentId, c.input, c.maxDescendants],
  );
  });
  const { run, room } = rows[0];
  if (run) return { runId: run.id, threadId: run.thread_id, agentId: run.agent_id };
  return { refused: room ? 'disabled' : 'full' };
}

/** How a sub-agent's run ended, for its parent's tool call: undefined while it has no result. */
export async function childRunEnd(db: Queryable, runId: string): Promise<{
  status: string; stopReason: string | null; output: string | null; error: { message: string } | null; durationMs: number;
} | undefined> {
  const { rows } = await db.query<{
    status: string; stop_reason: string | null; output: string | null; error: { message: string } | null; ms: number;
  }>(
    `SELECT status, stop_reason, output, error, (extract(epoch FROM ended_at - created_at) * 1000)::int AS ms
     FROM run_results WHERE run_id = $1`, [runId]);
  const r = rows[0];
  return r && { status: r.status, stopReason: r.stop_reason, output: r.output, error: r.error, durationMs: r.ms };
}
