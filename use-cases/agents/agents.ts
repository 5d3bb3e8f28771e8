import type { Client } from '@temporalio/client';
import { findAgentByRef, listAgents as listStoredAgents } from '../../store/agents';
import type { Agent } from '../../core/agent';
import type { Db, Queryable } from '../../store/pool';
import { idsOfRefs, resolveRefs } from '../../store/refs';
import { promptOrderProblem } from '../../core/prompt-order';
import type { PromptWhen } from '../../core/prompt-conditions';
import type { OperatorNames } from '../../platform/operator-names';
import { requireAdminForName, type Caller } from '../caller';
import { EngineError } from '../../core/engine-error';
import { runningRunOfAgent } from '../runs/agent-runs';

/** What the agent use cases read and write, and the rules the operator set for them. */
export interface AgentDeps {
  db: Db;
  /** to tell whether a run of the agent is running */
  client: Client;
  /** agent names the operator's files refer to: taking or freeing one is the operator's act */
  operatorNames: OperatorNames;
  /** the variables model.apiKeyEnv may name */
  llmKeyEnvs: readonly string[];
}

/** Every agent of the tenant, oldest first; deleted agents kept for their threads are left out. */
export const listAgents = (db: Db, tenantId: string): Promise<Agent[]> => listStoredAgents(db, tenantId);

/** The tenant's agent, by id or by name; not_found otherwise (another tenant's agent too, in the same words). */
export async function loadAgent(db: Db, tenantId: string, ref: string): Promise<Agent> {
  const agent = await findAgentByRef(db, ref, tenantId);
  if (!agent) throw new EngineError('not_found', `Agent ${ref} does not exist`);
  return agent;
}

/** An agent the API may change: not defined by a file, and with no run running (runs read their agent at every turn). */
export async function loadChangeableAgent(deps: AgentDeps, caller: Caller, ref: string, verb: 'edit' | 'delete'): Promise<Agent> {
  const agent = await loadAgent(deps.db, caller.tenantId, ref);
  if (agent.sourceFile) {
    throw new EngineError('defined_by_file', `Agent ${agent.name} is defined by the file ${agent.sourceFile}: ${verb} the file instead`);
  }
  const running = await runningRunOfAgent(deps, agent.id);
  if (running) {
    throw new EngineError('agent_busy', `Agent ${agent.name} has a running run ${running}: wait for it to end or cancel it first`);
  }
  return agent;
}

export function requireAdminForAgentName(caller: Caller, names: OperatorNames, name: string, field: string): void {
  requireAdminForName(caller, names, { kind: 'agent', name, field });
}

export { checkModel } from '../model-choice';

/**
 * The tenant's integration ids or names to ids; unknown ones (another tenant's too) are a 400 naming
 * them. The key-share lock keeps the integrations from being deleted before the agent is stored
 * (deleting one refuses while agents use it).
 */
export async function lockIntegrations(tx: Queryable, tenantId: string, refs: string[]): Promise<string[]> {
  const { ids, unknown } = await resolveRefs(tx, 'integrations', tenantId, refs, { lockForKeyShare: true });
  if (unknown.length > 0) throw new EngineError('validation', `Unknown integrationIds: ${unknown.join(', ')}`);
  return ids;
}

/** promptOrder's integration ids or names to ids, each one of `integrationIds` (the agent's), named once; a 400 otherwise. */
export async function resolvePromptOrder(tx: Queryable, tenantId: string, refs: string[], integrationIds: string[]): Promise<string[]> {
  const found = await idsOfRefs(tx, 'integrations', tenantId, refs);
  const problem = promptOrderProblem(refs, found, integrationIds);
  if (problem) throw new EngineError('validation', `body.promptOrder: ${problem}`);
  return found as string[];
}

/** promptWhen's keys (integration ids or names) to ids, each one of `integrationIds`, named once; a 400 otherwise. */
export async function resolvePromptWhen(
  tx: Queryable, tenantId: string, when: PromptWhen, integrationIds: string[],
): Promise<PromptWhen> {
  const refs = Object.keys(when);
  const found = await idsOfRefs(tx, 'integrations', tenantId, refs);
  const problem = promptOrderProblem(refs, found, integrationIds);
  if (problem) throw new EngineError('validation', `body.promptWhen: ${problem}`);
  return Object.fromEntries(refs.map((ref, i) => [found[i] as string, when[ref]]));
}

export const agentNameTaken = (name: string | undefined) => new EngineError('conflict', `An agent named ${name} already exists`);
