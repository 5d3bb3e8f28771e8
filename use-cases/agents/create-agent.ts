import { insertAgent, isUniqueViolation } from '../../store/agents';
import type { Agent } from '../../core/agent';
import { inTransaction } from '../../store/pool';
import type { Caller } from '../caller';
import {
  agentNameTaken, checkModel, lockIntegrations, requireAdminForAgentName, resolvePromptOrder, resolvePromptWhen, type AgentDeps,
} from './agents';
import type { CreateAgentRequest } from './agent-requests';
import { resolveSubAgents } from './sub-agents';

/**
 * Creating an agent: the operator's decisions (a name their files refer to, the model's endpoint
 * and key) → store it with its integrations and prompt order.
 */
export async function createAgent(deps: AgentDeps, caller: Caller, request: CreateAgentRequest): Promise<Agent> {
  requireAdminForAgentName(caller, deps.operatorNames, request.name, 'body.name');
  checkModel(deps, caller, request.model);
  try {
    return await inTransaction(deps.db, async (tx) => {
      const integrationIds = await lockIntegrations(tx, request.integrationIds ?? []);
      const promptOrder = await resolvePromptOrder(tx, request.promptOrder ?? [], integrationIds);
      const promptWhen = await resolvePromptWhen(tx, request.promptWhen ?? {}, integrationIds);
      const subAgentIds = await resolveSubAgents(tx, request.subAgents ?? []);
      return insertAgent(tx, { ...request, integrationIds, promptOrder, promptWhen, subAgentIds });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw agentNameTaken(request.name);
    throw err;
  }
}
