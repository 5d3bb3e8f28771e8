import type { ModelConfig } from '../agent-model';
import { newId } from '../ids';
import type { Queryable } from './pool';

export interface Agent {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  model: ModelConfig;
  integrationIds: string[];
  maxTurns: number;
  createdAt: string;
  updatedAt: string;
}

export interface NewAgent {
  name: string;
  description?: string;
  instructions?: string;
  model: ModelConfig;
  integrationIds?: string[];
  maxTurns?: number;
}

interface AgentRow {
  id: string; name: string; description: string | null; instructions: string | null; model: ModelConfig;
  integration_ids: string[]; max_turns: number; created_at: Date; updated_at: Date;
}

const toAgent = (r: AgentRow): Agent => ({
  id: r.id, name: r.name, description: r.description, instructions: r.instructions, model: r.model,
  integrationIds: r.integration_ids, maxTurns: r.max_turns,
  createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
});

export async function insertAgent(db: Queryable, agent: NewAgent): Promise<Agent> {
  const { rows } = await db.query<AgentRow>(
    `INSERT INTO agents (id, name, description, instructions, model, integration_ids, max_turns)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [newId('agt'), agent.name, agent.description ?? null, agent.instructions ?? null, JSON.stringify(agent.model),
      agent.integrationIds ?? [], agent.maxTurns ?? 20],
  );
  return toAgent(rows[0]);
}

export async function findAgent(db: Queryable, id: string): Promise<Agent | undefined> {
  const { rows } = await db.query<AgentRow>('SELECT * FROM agents WHERE id = $1', [id]);
  return rows[0] && toAgent(rows[0]);
}

/** Unpaged: agents are configuration, counted in tens, not in millions. */
export async function listAgents(db: Queryable): Promise<Agent[]> {
  const { rows } = await db.query<AgentRow>('SELECT * FROM agents ORDER BY created_at, id');
  return rows.map(toAgent);
}

/** True for the error PostgreSQL raises when an insert collides with a unique constraint. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}
