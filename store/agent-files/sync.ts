import { syncFileSubAgents, type FileSubAgents } from './sub-agent-sync';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { removeAgent } from '../agents';
import { listFileAgentsUnder } from './file-agents';
import { inTransaction, type Db, type Queryable } from '../pool';
import { apiKeyEnvProblem, DEFAULT_LLM_KEY_ENVS } from '../../core/llm-keys';
import { callerToolsProblem } from '../../platform/json-schema-check';
import { nameInTenant, servedTenants } from '../../core/file-tenants';
import type { Tenant } from '../../core/tenancy';
import { listTenants } from '../tenants';
import { storeFileAgent } from './store-file-agent';
import type { NameReference } from '../../platform/operator-names';
import { AgentFileError, parseChatmd, type AgentFileDefinition } from './parse-chatmd';

export const AGENT_FILE_EXTENSION = '.chatmd';
// Tool names in MCP are [A-Za-z0-9_.-]{1,128}; an agent file's stem becomes one as it is.
const AGENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const SYNC_LOCK_KEY = 0x6167_6669; // "agfi": one sync at a time across API processes

export interface SyncReport {
  /** agents created or changed: a name in `default`, `tenant/name` in another tenant */
  changed: string[];
  unchanged: string[];
  removed: string[];
  disabled: string[];
  /** bad files and name conflicts; the other files, and a file's other tenants, are synced all the same */
  errors: AgentFileError[];
  /** files that list tenants not created yet: their agents appear there once the operator creates them */
  waiting: string[];
  /** the agents the files define (bad files too) and the integrations they list (platform/operator-names.ts) */
  references: NameReference[];
}

/** A file read: its agent's name when it is a valid one, its definition when it parsed, and whether it may be stored. */
interface ReadFile { file: string; name?: string; def?: AgentFileDefinition; storable: boolean }

/**
 * Makes the agents defined by `dir`'s *.chatmd files match the files, in every tenant each file
 * serves (its `tenants`). Only agents whose file lies in this directory are touched: an API-defined
 * agent with the same name in a tenant is a conflict there, never overwritten. A file that fails to
 * parse keeps its last good version in the database; a tenant a file no longer lists loses its agent.
 */
export async function syncAgentFiles(db: Db, dirInput: string, llmKeyEnvs: readonly string[] = DEFAULT_LLM_KEY_ENVS): Promise<SyncReport> {
  const dir = path.resolve(dirInput);
  const report: SyncReport = { changed: [], unchanged: [], removed: [], disabled: [], errors: [], waiting: [], references: [] };
  const files = await listAgentFiles(dir);
  const read: ReadFile[] = [];
  for (const file of files) read.push(await readAgentFile(file, llmKeyEnvs, report));
  await inTransaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [SYNC_LOCK_KEY]);
    const tenants = await listTenants(tx);
    const { served, withSubAgents } = await storeAgents(tx, read, tenants, report);
    // Once every file agent is stored: a file may name an agent another file defines.
    for (const name of await syncFileSubAgents(tx, withSubAgents, report.errors)) {
      if (!report.changed.includes(name)) {
        report.changed.push(name);
        report.unchanged = report.unchanged.filter((n) => n !== name);
      }
    }
    await removeAgentsNoLongerDefined(tx, { dir, files, served, tenants }, report);
  });
  return report;
}

async function listAgentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isFile() && e.name.endsWith(AGENT_FILE_EXTENSION))
    .map((e) => path.join(dir, e.name))
    .sort();
}

/** The file's agent; a bad file's error in the report. */
async function readAgentFile(file: string, llmKeyEnvs: readonly string[], report: SyncReport): Promise<ReadFile> {
  const name = path.basename(file, AGENT_FILE_EXTENSION);
  const one: ReadFile = { file, storable: false };
  try {
    if (!AGENT_NAME.test(name)) {
      throw new AgentFileError(file, 1, `the file name "${name}" is not a valid agent name (letters, digits, "_", "-", "." up to 64)`);
    }
    one.name = name;
    one.def = parseChatmd(file, await readFile(file, 'utf8'));
    // Files are the operator's, but a key name they did not allow is still refused (the worker refuses it too).
    const refused = apiKeyEnvProblem(one.def.model, llmKeyEnvs);
    if (refused) throw new AgentFileError(file, one.def.configLine, `model.${refused}`);
    // The API's check, once per file: each tenant checks the names against its own integrations (store-file-agent.ts).
    const badTool = callerToolsProblem(one.def.callerTools, []);
    if (badTool) throw new AgentFileError(file, one.def.configLine, `callerTools${badTool.at}: ${badTool.problem}`);
    one.storable = true;
  } catch (err) {
    if (!(err instanceof AgentFileError)) throw err;
    report.errors.push(err);
  }
  return one;
}

/**
 * Stores each storable file's agent in every tenant it serves. The names each file refers to are
 * reserved in those tenants; a file that does not parse keeps its name in every tenant while the
 * operator fixes it. Returns the tenants each stored file serves, and what its sub-agents sync from.
 */
async function storeAgents(
  tx: Queryable, read: ReadFile[], tenants: Tenant[], report: SyncReport,
): Promise<{ served: Map<string, Set<string>>; withSubAgents: FileSubAgents[] }> {
  const tenantIds = new Map(tenants.map((t) => [t.name, t.id]));
  const served = new Map<string, Set<string>>();
  const withSubAgents: FileSubAgents[] = [];
  for (const one of read) {
    if (!one.name) continue;
    if (!one.def) {
      report.references.push(...referencesOf(one.file, one.name, undefined, '*'));
      continue;
    }
    const { ids, missing } = servedTenants(one.def.tenants, tenantIds);
    report.references.push(...referencesOf(one.file, one.name, one.def, one.def.tenants === '*' ? '*' : ids));
    if (!one.storable) continue;
    served.set(one.file, new Set(ids));
    if (missing.length > 0) {
      report.waiting.push(`${one.file}: tenant(s) ${missing.join(', ')} do not exist yet; the agent appears in each once it is created`);
    }
    for (const tenant of tenants.filter((t) => ids.includes(t.id))) {
      const stored = await storeFileAgent(tx, { file: one.file, name: one.name, def: one.def }, tenant);
      if (stored.outcome === 'refused') {
        report.errors.push(stored.error);
        continue;
      }
      (stored.outcome === 'changed' ? report.changed : report.unchanged).push(stored.reported);
      withSubAgents.push(stored.subAgents);
    }
  }
  return { served, withSubAgents };
}

/** The agent a file defines and the integrations and agents it lists, reserved in `tenantIds`. */
function referencesOf(
  file: string, name: string, def: Pick<AgentFileDefinition, 'integrations' | 'subAgents'> | undefined, tenantIds: '*' | string[],
): NameReference[] {
  const by = `agent file ${path.basename(file)}`;
  const listed: Pick<NameReference, 'kind' | 'name'>[] = [
    { kind: 'agent', name },
    ...(def?.integrations ?? []).map((ref) => ({ kind: 'integration' as const, name: ref })),
    ...(def?.subAgents ?? []).map((ref) => ({ kind: 'agent' as const, name: ref })),
  ];
  return listed.map((r) => ({ ...r, by, tenantIds }));
}

/**
 * The agents of this directory's files that are gone, and of tenants a file no longer serves:
 * removed, or disabled while threads or runs refer to them. A file that did not parse keeps them all.
 */
async function removeAgentsNoLongerDefined(
  tx: Queryable, at: { dir: string; files: string[]; served: Map<string, Set<string>>; tenants: Tenant[] }, report: SyncReport,
): Promise<void> {
  const present = new Set(at.files);
  for (const agent of await listFileAgentsUnder(tx, at.dir)) {
    const file = agent.sourceFile!;
    if (present.has(file) && (!at.served.has(file) || at.served.get(file)!.has(agent.tenantId))) continue;
    const tenant = at.tenants.find((t) => t.id === agent.tenantId) ?? { id: agent.tenantId, name: agent.tenantId };
    const outcome = await removeAgent(tx, agent.id);
    if (outcome === 'removed') report.removed.push(nameInTenant(agent.name, tenant));
    if (outcome === 'disabled') report.disabled.push(nameInTenant(agent.name, tenant));
  }
}
