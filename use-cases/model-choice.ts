import type { ModelConfig } from '../core/agent-model';
import type { Agent } from '../core/agent';
import { EngineError } from '../core/engine-error';
import { agentDisabledText, findAgent, findAgentByRef } from '../store/agents';
import type { Queryable } from '../store/pool';
import { apiKeyEnvProblem } from '../core/llm-keys';
import { requireAdmin, type Caller } from './caller';

/**
 * What a run made from another (a fork, a replay) runs on: an agent the caller names (by id or name,
 * in its tenant; unknown: 404), else the original's by id; an enabled one either way.
 */
export async function agentToRunOn(db: Queryable, caller: Caller, ref: string, named: boolean): Promise<Agent> {
  const agent = named ? await findAgentByRef(db, ref, caller.tenantId) : await findAgent(db, ref);
  if (!agent) throw new EngineError('not_found', `Agent ${ref} does not exist`);
  if (agent.disabledAt) throw new EngineError('agent_disabled', agentDisabledText(agent));
  return agent;
}

/**
 * A model as the API may take it (an agent's, a fork's): a key variable the operator allowed, and
 * an endpoint only the operator may choose.
 */
export function checkModel(deps: { llmKeyEnvs: readonly string[] }, caller: Caller, model: ModelConfig): void {
  const refused = apiKeyEnvProblem(model, deps.llmKeyEnvs);
  if (refused) throw new EngineError('validation', `body.model.${refused}`);
  // Where requests go and which key they carry is the operator's decision: a key sent elsewhere is a key given away.
  const decisive = model.provider === 'scripted' ? [] : (['baseUrl', 'apiKeyEnv'] as const).filter((f) => model[f] !== undefined);
  if (decisive.length > 0) requireAdmin(caller, decisive.map((f) => `body.model.${f}`).join(', '));
}
