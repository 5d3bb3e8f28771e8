import type { Queryable } from '../pool';
import { closesSubAgentCycle, resolveAgentRefs, subAgentsByIds } from '../sub-agents';
import { AgentFileError } from './parse-chatmd';

/** A file agent stored by this sync, with the sub-agents its file lists. */
export interface FileSubAgents {
  file: string;
  tenantId: string;
  /** the agent's name as the report gives it (core/file-tenants.ts nameInTenant) */
  reported: string;
  agentId: string;
  name: string;
  configLine: number;
  refs: string[];
}

/**
 * The file agents' `subAgents`, once every file agent of the sync is stored (a file may name an
 * agent another file defines): names or ids of the agent's tenant's agents → ids. A name that
 * another agent has taken since the last sync is reported, not followed (the agent it named, if it
 * still exists, stays); an unknown or disabled agent, or a cycle, is reported and the agent keeps
 * the sub-agents it had. Returns the names of the agents whose sub-agents changed.
 */
export async function syncFileSubAgents(tx: Queryable, agents: FileSubAgents[], errors: AgentFileError[]): Promise<string[]> {
  const changed: string[] = [];
  for (const a of agents) {
    const inTenant = a.reported === a.name ? '' : ` (${a.reported})`;
    const refused = (detail: string) => errors.push(new AgentFileError(a.file, a.configLine, `subAgents${inTenant}: ${detail}`));
    const { found, unknown } = await resolveAgentRefs(tx, a.tenantId, a.refs);
    if (unknown.length > 0) {
      refused(`unknown agents ${unknown.join(', ')}`);
      continue;
    }
    const disabled = found.filter((f) => f.disabled);
    if (disabled.length > 0) {
      refused(`${disabled.map((f) => f.name).join(', ')} disabled`);
      continue;
    }
    const { rows } = await tx.query<{ sub_agent_ids: string[] }>('SELECT sub_agent_ids FROM agents WHERE id = $1', [a.agentId]);
    const before = rows[0]?.sub_agent_ids ?? [];
    const ids = found.map((f) => f.id);
    if (before.length === ids.length) {
      const named = await subAgentsByIds(tx, before);
      for (let i = 0; i < ids.length; i++) {
        const was = named.find((f) => f.id === before[i]);
        if (was && !was.disabled && ids[i] !== before[i] && a.refs[i] === found[i].name && was.name !== a.refs[i]) {
          refused(`"${a.refs[i]}" now names another agent; keeping ${was.name} (${was.id}), which it named before`);
          ids[i] = before[i];
        }
      }
    }
    if (ids.includes(a.agentId) || await closesSubAgentCycle(tx, a.agentId, ids)) {
      refused('the agent would reach itself through its sub-agents (a cycle)');
      continue;
    }
    const { rowCount } = await tx.query(
      'UPDATE agents SET sub_agent_ids = $2, updated_at = now() WHERE id = $1 AND sub_agent_ids IS DISTINCT FROM $2::text[]',
      [a.agentId, ids],
    );
    if ((rowCount ?? 0) > 0) changed.push(a.reported);
  }
  return changed;
}
