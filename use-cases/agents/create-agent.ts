import { insertAgent, isUniqueViolation } from '../../store/agents';
import type { Agent } from '../../core/agent';
import { inTransaction } from '../../store/pool';
import type { Caller } from '../caller';
import {
  agentNameTaken, checkModel, lockIntegrations, requireAdminForAgentName, resolvePromptOrder, resolvePromptWhen, type AgentDeps,
} from './agents';
import type { CreateAgentRequest } from './agent-requests';
import { resolveSubAgents } from './sub-agents';
import { checkCallerTools } from '../runs/caller-tool-declarations';

/**
 * Creating an agent in the caller's tenant: the operator's decisions (a name their files refer to,
 * the model's endpoint and key) → store it with its integrations, sub-agents and prompt order, each
 * the tenant's, and its caller tools (none another tool of its runs).
 */
export async function createAgent(deps: AgentDeps, caller: Caller, request: CreateAgentRequest): Promise<Agent> {
  requireAdminForAgentName(caller, deps.operatorNames, request.name, 'body.name');
  checkModel(deps, caller, request.model);
  try {
    return await inTransaction(deps.db, async (tx) => {
      const { tenantId } = caller;
      const integrationIds = await lockIntegrations(tx, tenantId, request.integrationIds ?? []);
      const promptOrder = await resolvePromptOrder(tx, tenantId, request.promptOrder ?? [], integrationIds);
      const promptWhen = await resolvePromptWhen(tx, tenantId, request.promptWhen ?? {}, integrationIds);
      const subAgentIds = await resolveSubAgents(tx, tenantId, request.subAgents ?? []);
      await checkCallerTools(tx, request.callerTools ?? [], integrationIds, 'body.callerTools');
      return insertAgent(tx, { ...request, tenantId, integrationIds, promptOrder, promptWhen, subAgentIds });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw agentNameTaken(request.name);
    throw err;
  }
}
