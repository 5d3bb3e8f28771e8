import { agentDisabledText, isUniqueViolation, updateAgent } from '../../store/agents';
import type { Agent } from '../../core/agent';
import { inTransaction } from '../../store/pool';
import type { Caller } from '../caller';
import { EngineError } from '../../core/engine-error';
import { promptOrderWithin } from '../../core/prompt-order';
import { promptWhenWithin } from '../../core/prompt-conditions';
import {
  agentNameTaken, checkModel, loadChangeableAgent, lockIntegrations, requireAdminForAgentName, resolvePromptOrder, resolvePromptWhen,
  type AgentDeps,
} from './agents';
import type { ChangeAgentRequest } from './agent-requests';
import { resolveSubAgents } from './sub-agents';
import { checkCallerTools } from '../runs/caller-tool-declarations';

/**
 * Changing an agent, only the fields given: an agent no file defines, with no run running, not
 * deleted; renaming takes one name and frees another, so both are checked against the operator's files.
 */
export async function changeAgent(deps: AgentDeps, caller: Caller, ref: string, changes: ChangeAgentRequest): Promise<Agent> {
  const agent = await loadChangeableAgent(deps, caller, ref, 'edit');
  const { tenantId } = caller;
  if (agent.disabledAt) throw new EngineError('agent_disabled', agentDisabledText(agent));
  if (changes.name !== undefined && changes.name !== agent.name) {
    for (const name of [agent.name, changes.name]) requireAdminForAgentName(caller, deps.operatorNames, name, 'body.name');
  }
  if (changes.model) checkModel(deps, caller, changes.model);
  try {
    return await inTransaction(deps.db, async (tx) => {
      const integrationIds = changes.integrationIds && await lockIntegrations(tx, tenantId, changes.integrationIds);
      const subAgentIds = changes.subAgents && await resolveSubAgents(tx, tenantId, changes.subAgents, agent.id);
      // The caller tools, new or kept, must not be named as tools of the agent's integrations, new or kept.
      if (changes.callerTools || integrationIds) {
        const field = changes.callerTools ? 'body.callerTools' : 'callerTools';
        await checkCallerTools(tx, changes.callerTools ?? agent.callerTools, integrationIds ?? agent.integrationIds, field);
      }
      // New integrations without a new order keep the order of those the agent still has.
      const promptOrder = changes.promptOrder
        ? await resolvePromptOrder(tx, tenantId, changes.promptOrder, integrationIds ?? agent.integrationIds)
        : integrationIds && promptOrderWithin(agent.promptOrder, integrationIds);
      const promptWhen = changes.promptWhen
        ? await resolvePromptWhen(tx, tenantId, changes.promptWhen, integrationIds ?? agent.integrationIds)
        : integrationIds && promptWhenWithin(agent.promptWhen, integrationIds);
      return (await updateAgent(tx, agent.id, {
        ...changes, ...(integrationIds ? { integrationIds } : {}), ...(promptOrder ? { promptOrder } : {}),
        ...(promptWhen ? { promptWhen } : {}), ...(subAgentIds ? { subAgentIds } : {}),
      }))!;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw agentNameTaken(changes.name);
    throw err;
  }
}
