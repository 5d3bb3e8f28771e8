import type { Tenant } from '../../core/tenancy';
import { nameInTenant } from '../../core/file-tenants';
import { promptOrderProblem } from '../../core/prompt-order';
import type { PromptWhen } from '../../core/prompt-conditions';
import { callerToolNameClash } from '../../core/caller-tools';
import { findIntegrations } from '../integrations/integrations';
import type { Queryable } from '../pool';
import { idsOfRefs, resolveRefs } from '../refs';
import { findAgentOriginByName, upsertFileAgent } from './file-agents';
import { AgentFileError, type AgentFileDefinition } from './parse-chatmd';
import type { FileSubAgents } from './sub-agent-sync';

/** A file that parsed, with its agent's name (the file's stem). */
export interface ParsedFile { file: string; name: string; def: AgentFileDefinition }

/** What storing one file's agent in one tenant did. */
export type StoredFileAgent =
  | { outcome: 'changed' | 'unchanged'; reported: string; subAgents: FileSubAgents }
  | { outcome: 'refused'; error: AgentFileError };

/** An agent's integrations, as ids, in the forms the agent row stores. */
interface ResolvedIntegrations { ids: string[]; promptOrder: string[]; promptWhen: PromptWhen }

/**
 * Creates or updates the file's agent in one tenant it serves, unless its integrations are wrong
 * there, a caller tool's name would be a tool of one of them (its schemas and other names are checked
 * once per file, sync.ts), or an agent of another origin has its name in that tenant (refused, naming the
 * tenant unless it is `default`). The other tenants the file serves are stored all the same.
 */
export async function storeFileAgent(tx: Queryable, { file, name, def }: ParsedFile, tenant: Tenant): Promise<StoredFileAgent> {
  const reported = nameInTenant(name, tenant);
  const where = reported === name ? '' : ` in tenant ${tenant.name}`;
  const integrations = await resolveIntegrations(tx, tenant.id, def);
  if (typeof integrations === 'string') {
    return { outcome: 'refused', error: new AgentFileError(file, def.configLine, `${integrations}${where}`) };
  }
  const clash = await callerToolClash(tx, def, integrations.ids);
  if (clash) return { outcome: 'refused', error: new AgentFileError(file, def.configLine, `${clash}${where}`) };
  const existing = await findAgentOriginByName(tx, tenant.id, name);
  if (existing && existing.sourceFile !== file) {
    const owner = existing.sourceFile ? `by ${existing.sourceFile}` : 'through the API';
    const detail = `an agent named "${name}" is already defined${where} ${owner}; this file is skipped${where ? ' there' : ''}`;
    return { outcome: 'refused', error: new AgentFileError(file, 1, detail) };
  }
  const changed = await upsertFileAgent(tx, {
    tenantId: tenant.id, name, sourceFile: file, description: def.description ?? null, instructions: def.instructions ?? null,
    model: def.model, integrationIds: integrations.ids, promptOrder: integrations.promptOrder, promptWhen: integrations.promptWhen,
    maxTurns: def.maxTurns ?? 20, mcpTasks: def.mcpTasks, limits: def.limits, callerTools: def.callerTools, template: def.template,
  }, existing?.id);
  const agentId = existing?.id ?? (await findAgentOriginByName(tx, tenant.id, name))!.id;
  return {
    outcome: changed ? 'changed' : 'unchanged', reported,
    subAgents: { file, tenantId: tenant.id, reported, agentId, name, configLine: def.configLine, refs: def.subAgents },
  };
}

/**
 * The integrations the file names, the tenant's, as ids; a problem when one is unknown there, or
 * promptOrder or promptWhen names one the agent lacks.
 */
async function resolveIntegrations(tx: Queryable, tenantId: string, def: AgentFileDefinition): Promise<ResolvedIntegrations | string> {
  const { ids, unknown } = await resolveRefs(tx, 'integrations', tenantId, def.integrations);
  if (unknown.length > 0) return `unknown integration(s): ${unknown.join(', ')}`;
  const promptOrder = await idsOfRefs(tx, 'integrations', tenantId, def.promptOrder);
  const misordered = promptOrderProblem(def.promptOrder, promptOrder, ids);
  if (misordered) return `promptOrder: ${misordered}`;
  const whenRefs = Object.keys(def.promptWhen);
  const whenIds = await idsOfRefs(tx, 'integrations', tenantId, whenRefs);
  const misplaced = promptOrderProblem(whenRefs, whenIds, ids);
  if (misplaced) return `promptWhen: ${misplaced}`;
  const promptWhen = Object.fromEntries(whenRefs.map((ref, i) => [whenIds[i] as string, def.promptWhen[ref]]));
  return { ids, promptOrder: promptOrder as string[], promptWhen };
}

/** Why one of the file's caller tools would be a tool of one of these integrations of the tenant (core/caller-tools.ts). */
async function callerToolClash(tx: Queryable, def: AgentFileDefinition, integrationIds: string[]): Promise<string | undefined> {
  if (def.callerTools.length === 0) return undefined;
  const names = (await findIntegrations(tx, integrationIds)).map((i) => i.name);
  for (const [i, tool] of def.callerTools.entries()) {
    const clash = callerToolNameClash(tool.name, names);
    if (clash) return `callerTools[${i}].name: ${clash}`;
  }
  return undefined;
}
