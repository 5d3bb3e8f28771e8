import type { ModelConfig } from '../../core/agent-model';
import type { CallerTool } from '../../core/caller-tools';
import type { RunLimits } from '../../core/run-limits';
import type { PromptWhen } from '../../core/prompt-conditions';
import type { TemplateMessage } from './parse-chatmd';
import { newId } from '../../platform/ids';
import type { Queryable } from '../pool';

/**
 * The parts of agents that only agent files and the MCP server use: where an agent was defined
 * (source_file, NULL for API-defined agents), its prompt template, and whether its file went away.
 * An agent file defines one agent in each tenant it serves (its `tenants`, default `default`):
 * one row per tenant, each with its own id and the same source_file.
 */

export interface FileAgentFields {
  tenantId: string;
  name: string;
  sourceFile: string;
  description: string | null;
  instructions: string | null;
  model: ModelConfig;
  integrationIds: string[];
  /** integration ids, each one of integrationIds (default none) */
  promptOrder?: string[];
  /** keyed by integration ids, each one of integrationIds (default none) */
  promptWhen?: PromptWhen;
  maxTurns: number;
  /** default true */
  mcpTasks?: boolean;
  limits?: RunLimits;
  /** default none */
  callerTools?: CallerTool[];
  template: TemplateMessage[];
}

export interface AgentOrigin {
  id: string;
  tenantId: string;
  name: string;
  sourceFile: string | null;
  disabled: boolean;
}

interface OriginRow { id: string; tenant_id: string; name: string; source_file: string | null; disabled_at: Date | null }
const toOrigin = (r: OriginRow): AgentOrigin => ({
  id: r.id, tenantId: r.tenant_id, name: r.name, sourceFile: r.source_file, disabled: r.disabled_at !== null,
});

/** The tenant's agent of that name, whoever defined it. */
export async function findAgentOriginByName(db: Queryable, tenantId: string, name: string): Promise<AgentOrigin | undefined> {
  const { rows } = await db.query<OriginRow>(
    'SELECT id, tenant_id, name, source_file, disabled_at FROM agents WHERE tenant_id = $2 AND name = $1', [name, tenantId],
  );
  return rows[0] && toOrigin(rows[0]);
}

/** Inserts or updates the agent of a file; returns whether anything changed. */
export async function upsertFileAgent(db: Queryable, a: FileAgentFields, existingId?: string): Promise<boolean> {
  const values = [
    a.name, a.description, a.instructions, JSON.stringify(a.model), a.integrationIds, a.maxTurns, JSON.stringify(a.template), a.sourceFile,
    a.mcpTasks ?? true, a.limits ? JSON.stringify(a.limits) : null, a.promptOrder ?? [], JSON.stringify(a.promptWhen ?? {}),
    a.callerTools?.length ? JSON.stringify(a.callerTools) : null,
  ];
  if (!existingId) {
    await db.query(
      `INSERT INTO agents (id, name, description, instructions, model, integration_ids, max_turns, template, source_file, mcp_tasks, limits,
                           prompt_order, prompt_when, caller_tools, tenant_id)
       VALUES ($14, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15)`,
      [...values, newId('agt'), a.tenantId],
    );
    return true;
  }
  // IS DISTINCT FROM keeps updated_at still when nothing changed, so list_changed fires only on real edits.
  const { rowCount } = await db.query(
    `UPDATE agents SET name = $1, description = $2, instructions = $3, model = $4, integration_ids = $5, max_turns = $6,
       template = $7, source_file = $8, mcp_tasks = $9, limits = $10, prompt_order = $11, prompt_when = $12, caller_tools = $13,
       disabled_at = NULL, updated_at = now()
     WHERE id = $14
       AND (name, description, instructions, model, integration_ids, max_turns, template, source_file, mcp_tasks, limits, prompt_order,
            prompt_when, caller_tools, disabled_at)
       IS DISTINCT FROM ($1, $2, $3, $4::jsonb, $5::text[], $6::integer, $7::jsonb, $8, $9::boolean, $10::jsonb, $11::text[], $12::jsonb,
                         $13::jsonb, NULL::timestamptz)`,
    [...values, existingId],
  );
  return (rowCount ?? 0) > 0;
}

/** The agents, in every tenant, of the files in `dir`. */
export async function listFileAgentsUnder(db: Queryable, dir: string): Promise<AgentOrigin[]> {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const { rows } = await db.query<OriginRow>(
    'SELECT id, tenant_id, name, source_file, disabled_at FROM agents WHERE starts_with(source_file, $1)', [prefix],
  );
  return rows.map(toOrigin);
}

/** What the MCP server exposes of an agent. */
export interface ExposedAgent {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  template: TemplateMessage[];
  /** whether a client may call it as a task */
  mcpTasks: boolean;
  /** it declares caller tools (migration 37): only a caller that runs them, through the HTTP API, may start its runs */
  callerTools: boolean;
}

/** The tenant's agents that are not deleted, by name. */
export async function listExposedAgents(db: Queryable, tenantId: string): Promise<ExposedAgent[]> {
  const { rows } = await db.query<ExposedAgent>(
    `SELECT id, name, description, instructions, template, mcp_tasks AS "mcpTasks",
       coalesce(jsonb_array_length(caller_tools), 0) > 0 AS "callerTools" FROM agents
     WHERE tenant_id = $1 AND disabled_at IS NULL ORDER BY name`, [tenantId],
  );
  return rows;
}

/** Changes whenever an agent of the tenant is added, edited, disabled or removed; cheap enough to poll. */
export async function agentListVersion(db: Queryable, tenantId: string): Promise<string> {
  const { rows } = await db.query<{ v: string }>(
    `SELECT count(*)::text || ':' || COALESCE(max(updated_at)::text, '') || ':' || COALESCE(sum(hashtext(id))::text, '') AS v
     FROM agents WHERE tenant_id = $1`, [tenantId],
  );
  return rows[0].v;
}

/** A new thread's conversation before its first run: the agent file's rendered template. */
export async function seedThreadMessages(db: Queryable, threadId: string, messages: TemplateMessage[]): Promise<void> {
  let seq = 1;
  for (const message of messages) {
    // run_id 'template' marks messages that no run wrote.
    await db.query('INSERT INTO messages (thread_id, seq, run_id, message) VALUES ($1, $2, $3, $4)',
      [threadId, seq++, 'template', JSON.stringify(message)]);
  }
}
