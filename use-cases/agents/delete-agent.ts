import { removeAgent } from '../../store/agents';
import type { Agent } from '../../core/agent';
import type { Caller } from '../caller';
import { loadAgent, loadChangeableAgent, requireAdminForAgentName, type AgentDeps } from './agents';
import { refuseIfListed } from './sub-agents';

/**
 * Deleting an agent: while threads or runs refer to it, it is disabled instead (kept readable,
 * closed to new threads and runs), and the disabled agent is the answer; undefined once deleted.
 */
export async function deleteAgent(deps: AgentDeps, caller: Caller, ref: string): Promise<Agent | undefined> {
  const agent = await loadChangeableAgent(deps, caller, ref, 'delete');
  requireAdminForAgentName(caller, deps.operatorNames, agent.name, `agent ${agent.name}`);
  await refuseIfListed(deps.db, agent.id, agent.name);
  if ((await removeAgent(deps.db, agent.id)) === 'removed') return undefined;
  return loadAgent(deps.db, caller.tenantId, agent.id);
}
