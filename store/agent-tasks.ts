import type { Queryable } from './pool';

/**
 * Agent runs an MCP client started as tasks (agent_tasks): the task's id is the run's, and the run
 * is its state; this table says only that it is a task, whose it is and for how long.
 */

/** Who may see a task: the holders of the API key, of the admin key, or local callers without keys (stdio, loopback). */
/** `api`, `admin` or `local` (the kind of key) in the tenant `default`; `<tenant id>:<kind>` in another (mcp-server/method-roles.ts) */
export type TaskScope = string;

export interface AgentTask {
  runId: string;
  scope: TaskScope;
  ttlMs: number;
  pollMs: number;
  createdAt: string;
  /** where the task stands in its scope's list, to the microsecond (a list page's cursor) */
  position: string;
}

interface Row { run_id: string; scope: TaskScope; ttl_ms: string; poll_ms: number; created_at: Date; position: string }

const COLUMNS = "run_id, scope, ttl_ms, poll_ms, created_at, (extract(epoch FROM created_at) * 1000000)::bigint::text AS position";

const toTask = (r: Row): AgentTask => ({
  runId: r.run_id, scope: r.scope, ttlMs: Number(r.ttl_ms), pollMs: r.poll_ms, createdAt: r.created_at.toISOString(), position: r.position,
});

// A task past its ttl is gone as a task (its run stays, as every run does).
const LIVE = "created_at + ttl_ms * interval '1 millisecond' > now()";

export async function insertAgentTask(db: Queryable, task: Omit<AgentTask, 'createdAt' | 'position'>): Promise<AgentTask> {
  const { rows } = await db.query<Row>(
    `INSERT INTO agent_tasks (run_id, scope, ttl_ms, poll_ms) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [task.runId, task.scope, task.ttlMs, task.pollMs],
  );
  // Expired tasks are of no use: pruned here, so no job is needed.
  await db.query(`DELETE FROM agent_tasks WHERE NOT (${LIVE})`);
  return toTask(rows[0]);
}

/** The task, when the run was started as one in this scope and has not expired. */
export async function findAgentTask(db: Queryable, runId: string, scope: TaskScope): Promise<AgentTask | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM agent_tasks WHERE run_id = $1 AND scope = $2 AND ${LIVE}`, [runId, scope]);
  return rows[0] && toTask(rows[0]);
}

/** One page of a scope's live tasks, newest first, after `after` (the previous page's last task's position and run id). */
export async function listAgentTasks(
  db: Queryable, scope: TaskScope, limit: number, after?: { position: string; runId: string },
): Promise<AgentTask[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM agent_tasks WHERE scope = $1 AND ${LIVE}
       AND ($2::bigint IS NULL OR ((extract(epoch FROM created_at) * 1000000)::bigint, run_id) < ($2::bigint, $3::text))
     ORDER BY created_at DESC, run_id DESC LIMIT $4`,
    [scope, after?.position ?? null, after?.runId ?? null, limit],
  );
  return rows.map(toTask);
}
