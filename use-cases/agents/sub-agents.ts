import { subAgentToolName } from '../../core/sub-agents';
import type { Queryable } from '../../store/pool';
import { agentsListing, closesSubAgentCycle, resolveAgentRefs } from '../../store/sub-agents';
import { EngineError } from '../../core/engine-error';

/**
 * An agent's `subAgents` as it is saved: names or ids → ids, each an enabled agent of the tenant
 * (another tenant's is unknown), their tools' names distinct, and no cycle (the agent reachable
 * from its own sub-agents). `agentId` is absent for a new agent, which no agent lists yet.
 */
export async function resolveSubAgents(tx: Queryable, tenantId: string, refs: string[], agentId?: string): Promise<string[]> {
  const { found, unknown } = await resolveAgentRefs(tx, tenantId, refs);
  if (unknown.length > 0) throw new EngineError('validation', `body.subAgents: unknown agents ${unknown.join(', ')}`);
  const disabled = found.filter((a) => a.disabled);
  if (disabled.length > 0) throw new EngineError('validation', `body.subAgents: ${disabled.map((a) => a.name).join(', ')} disabled`);
  const tools = new Map<string, string>();
  for (const a of found) {
    const tool = subAgentToolName(a.name);
    const other = tools.get(tool);
    if (other && other !== a.id) throw new EngineError('validation', `body.subAgents: two sub-agents would both be the tool ${tool}`);
    tools.set(tool, a.id);
  }
  const ids = [...new Set(found.map((a) => a.id))];
  if (agentId && (ids.includes(agentId) || await closesSubAgentCycle(tx, agentId, ids))) {
    throw new EngineError('sub_agent_cycle', 'body.subAgents: the agent would reach itself through its sub-agents (a cycle)');
  }
  return ids;
}

/** An agent other agents list as a sub-agent is not deleted: a 409 naming them. */
export async function refuseIfListed(db: Queryable, agentId: string, agentName: string): Promise<void> {
  const listing = await agentsListing(db, agentId);
  if (listing.length > 0) {
    const listers = listing.join(', ');
    throw new EngineError('agent_in_use', `Agent ${agentName} is a sub-agent of ${listers}: remove it from their subAgents first`);
  }
}
