import { insertAgent, isUniqueViolation } from '../../store/agents';
import type { Agent } from '../../core/agent';
import { inTransaction } from '../../store/pool';
import type { Caller } from '../caller';
import { agentNameTaken, checkModel, lockIntegrations, requireAdminForAgentName, type AgentDeps } from './agents';
import type { CreateAgentRequest } from './agent-requests';
import { resolveSubAgents } from './sub-agents';

/** Creating an agent: the operator's decisions (a name their files refer to, the model's endpoint and key) → store it with its integrations. */
export async function createAgent(deps: AgentDeps, caller: Caller, request: CreateAgentRequest): Promise<Agent> {
  requireAdminForAgentName(caller, deps.operatorNames, request.name, 'body.name');
  checkModel(deps, caller, request.model);
  try {
    return await inTransaction(deps.db, async (tx) => insertAgent(tx, {
      ...request, integrationIds: await lockIntegrations(tx, request.integrationIds ?? []), subAgentIds: await resolveSubAgents(tx, request.subAgents ?? []),
    }));
  } catch (err) {
    if (isUniqueViolation(err)) throw agentNameTaken(request.name);
    throw err;
  }
}
