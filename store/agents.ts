import type { ModelConfig } from '../core/agent-model';
import { newId } from '../platform/ids';
import { statementName, type Queryable } from './pool';
import { rowByRef } from './refs';
import type { Agent } from '../core/agent';
import type { RunLimits } from '../core/run-limits';
import type { PromptWhen } from '../core/prompt-conditions';
import { DEFAULT_TENANT_ID } from '../core/tenancy';
import type { CallerTool } from '../core/caller-tools';

export interface NewAgent {
  /** the tenant the agent belongs to; `default` when absent (the operator's files, tests) */
  tenantId?: string;
  name: string;
  description?: string;
  instructions?: string;
  model: ModelConfig;
  integrationIds?: string[];
  /** integration ids, each one of integrationIds */
  promptOrder?: string[];
  /** keyed by integration ids, each one of integrationIds */
  promptWhen?: PromptWhen;
  maxTurns?: number;
  maxToolResultBytes?: number;
  mcpTasks?: boolean;
  limits?: RunLimits | null;
  /** resolved ids */
  subAgentIds?: string[];
  callerTools?: CallerTool[];
}

/** A row as the driver reads it, or as row_to_json gives it inside another statement (timestamps as text). */
export interface AgentRow {
  id: string; name: string; description: string | null; instructions: string | null; model: ModelConfig;
  integration_ids: string[]; prompt_order: string[]; prompt_when: PromptWhen | null; max_turns: number; max_tool_result_bytes: number;
  mcp_tasks: boolean; limits: RunLimits | null;
  sub_agent_ids: string[] | null; source_file: string | null; caller_tools?: CallerTool[] | null;
  disabled_at: Date | string | null; created_at: Date | string; updated_at: Date | string;
}

const AGENT_COLUMNS = 'id, name, description, instructions, model, integration_ids, prompt_order, prompt_when, max_turns, '
  + 'max_tool_result_bytes, mcp_tasks, limits, sub_agent_ids, source_file, caller_tools, disabled_at, created_at, updated_at';

export const toAgent = (r: AgentRow): Agent => ({
  id: r.id, name: r.name, description: r.description, instructions: r.instructions, model: r.model,
  integrationIds: r.integration_ids, promptOrder: r.prompt_order ?? [], promptWhen: r.prompt_when ?? {}, maxTurns: r.max_turns,
  maxToolResultBytes: r.max_tool_result_bytes, mcpTasks: r.mcp_tasks,
  limits: r.limits ?? null, subAgents: r.sub_agent_ids ?? [], callerTools: r.caller_tools ?? [], sourceFile: r.source_file,
  disabledAt: r.disabled_at ? new Date(r.disabled_at).toISOString() : null,
  createdAt: new Date(r.created_at).toISOString(), updatedAt: new Date(r.updated_at).toISOString(),
});

export async function insertAgent(db: Queryable, agent: NewAgent): Promise<Agent> {
  const { rows } = await db.query<AgentRow>(
    `INSERT INTO agents (id, name, description, instructions, model, integration_ids, max_turns, max_tool_result_bytes, mcp_tasks, limits,
                         prompt_order, sub_agent_ids, prompt_when, tenant_id, caller_tools)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING *`,
    [newId('agt'), agent.name, agent.description ?? null, agent.instructions ?? null, JSON.stringify(agent.model),
      agent.integrationIds ?? [], agent.maxTurns ?? 20, agent.maxToolResultBytes ?? 65_536, agent.mcpTasks ?? true,
      agent.limits ? JSON.stringify(agent.limits) : null,
      agent.promptOrder ?? [], agent.subAgentIds ?? [], JSON.stringify(agent.promptWhen ?? {}), agent.tenantId ?? DEFAULT_TENANT_ID,
      agent.callerTools?.length ? JSON.stringify(agent.callerTools) : null],
  );
  return toAgent(rows[0]);
}

export async function findAgent(db: Queryable, id: string): Promise<Agent | undefined> {
  // Every run's start reads its agent: a prepared statement, so its columns are named (a prepared
  // SELECT * would fail on every pooled connection once a migration adds a column).
  const text = `SELECT ${AGENT_COLUMNS} FROM agents WHERE id = $1`;
  const { rows } = await db.query<AgentRow>({ name: statementName(text), text, values: [id] });
  return rows[0] && toAgent(rows[0]);
}

/** The tenant's agent named `ref` by its id or its name (refs.ts), in one statement; another tenant's is not found. */
export async function findAgentByRef(db: Queryable, ref: string, tenantId = DEFAULT_TENANT_ID): Promise<Agent | undefined> {
  const text = rowByRef('agents', '$1', '$2', AGENT_COLUMNS).slice(1, -1);
  const { rows } = await db.query<AgentRow>({ name: statementName(text), text, values: [ref, tenantId] });
  return rows[0] && toAgent(rows[0]);
}

/** The agent named `ref` (by id or name) in the tenant of the thread: an agent a run on the thread may be of. */
export async function findThreadAgentByRef(db: Queryable, threadId: string, ref: string): Promise<Agent | undefined> {
  const text = rowByRef('agents', '$1', '(SELECT tenant_id FROM threads WHERE id = $2)', AGENT_COLUMNS).slice(1, -1);
  const { rows } = await db.query<AgentRow>({ name: statementName(text), text, values: [ref, threadId] });
  return rows[0] && toAgent(rows[0]);
}

/** Why a disabled agent takes no new threads or runs. */
export const agentDisabledText = (agent: Pick<Agent, 'name' | 'sourceFile'>) => (agent.sourceFile
  ? `Agent ${agent.name} is disabled: its file ${agent.sourceFile} was removed; it is kept for the threads that refer to it`
  : `Agent ${agent.name} was deleted; it is kept only for the threads and runs that refer to it`);

/** The tenant's agents, unpaged: agents are configuration, counted in tens, not in millions. Disabled (deleted) agents are left out. */
export async function listAgents(db: Queryable, tenantId: string): Promise<Agent[]> {
  const { rows } = await db.query<AgentRow>(
    'SELECT * FROM agents WHERE tenant_id = $1 AND disabled_at IS NULL ORDER BY created_at, id', [tenantId]);
  return rows.map(toAgent);
}

export type AgentChanges = Partial<Pick<Agent,
  'name' | 'description' | 'instructions' | 'model' | 'integrationIds' | 'promptOrder' | 'promptWhen' | 'maxTurns' | 'maxToolResultBytes'
  | 'mcpTasks' | 'limits' | 'callerTools'>>
  & { subAgentIds?: string[] };

const COLUMNS: Record<keyof AgentChanges, string> = {
  name: 'name', description: 'description', instructions: 'instructions', model: 'model', integrationIds: 'integration_ids',
  promptOrder: 'prompt_order', promptWhen: 'prompt_when',
  maxTurns: 'max_turns', maxToolResultBytes: 'max_tool_result_bytes', mcpTasks: 'mcp_tasks', limits: 'limits', subAgentIds: 'sub_agent_ids',
  callerTools: 'caller_tools',
};

/** Applies the given fields (null clears description and instructions); undefined when there is no such agent. */
export async function updateAgent(db: Queryable, id: string, changes: AgentChanges): Promise<Agent | undefined> {
  const fields = (Object.keys(COLUMNS) as (keyof AgentChanges)[]).filter((k) => changes[k] !== undefined);
  const asJson = (k: keyof AgentChanges) =>
    k === 'model' || k === 'promptWhen' || k === 'callerTools' || (k === 'limits' && changes[k] !== null);
  const values = fields.map((k) => (asJson(k) ? JSON.stringify(changes[k]) : changes[k]));
  const sets = fields.map((k, i) => `${COLUMNS[k]} = $${i + 2}`);
  const { rows } = await db.query<AgentRow>(
    `UPDATE agents SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 RETURNING *`, [id, ...values],
  );
  return rows[0] && toAgent(rows[0]);
}

/**
 * Deletes an agent, unless threads or runs still refer to it: then it is disabled instead (left
 * out of listings and the MCP server, closed to new threads and runs), so that their history stays readable.
 */
export async function removeAgent(db: Queryable, id: string): Promise<'removed' | 'disabled' | 'unchanged'> {
  const { rowCount } = await db.query(
    `DELETE FROM agents WHERE id = $1
       AND NOT EXISTS (SELECT 1 FROM threads WHERE agent_id = $1) AND NOT EXISTS (SELECT 1 FROM runs WHERE agent_id = $1)`, [id],
  );
  if ((rowCount ?? 0) > 0) return 'removed';
  const disabled = await db.query('UPDATE agents SET disabled_at = now(), updated_at = now() WHERE id = $1 AND disabled_at IS NULL', [id]);
  return (disabled.rowCount ?? 0) > 0 ? 'disabled' : 'unchanged';
}

/** True for the error PostgreSQL raises when an insert collides with a unique constraint. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}
