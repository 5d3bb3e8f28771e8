import { watch, type FSWatcher } from 'node:fs';
import { syncFileSubAgents, type FileSubAgents } from './sub-agent-sync';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { removeAgent } from '../agents';
import { FILE_TENANT_ID, findAgentOriginByName, listFileAgentsUnder, upsertFileAgent } from './file-agents';
import { inTransaction, type Db, type Queryable } from '../pool';
import { apiKeyEnvProblem, DEFAULT_LLM_KEY_ENVS } from '../../core/llm-keys';
import { idsOfRefs, resolveRefs } from '../refs';
import { promptOrderProblem } from '../../core/prompt-order';
import type { PromptWhen } from '../../core/prompt-conditions';
import type { Logger } from '../../platform/logger';
import type { NameReference } from '../../platform/operator-names';
import { AgentFileError, parseChatmd, type AgentFileDefinition } from './parse-chatmd';

export const AGENT_FILE_EXTENSION = '.chatmd';
// Tool names in MCP are [A-Za-z0-9_.-]{1,128}; an agent file's stem becomes one as it is.
const AGENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const SYNC_LOCK_KEY = 0x6167_6669; // "agfi": one sync at a time across API processes

export interface SyncReport {
  /** agents created or changed */
  changed: string[];
  unchanged: string[];
  removed: string[];
  disabled: string[];
  /** bad files and name conflicts; the other files are synced all the same */
  errors: AgentFileError[];
  /** the agents the files define (bad files too) and the integrations they list (platform/operator-names.ts) */
  references: NameReference[];
}

/** A file that parsed, with its agent's name (the file's stem). */
interface ParsedFile { file: string; name: string; def: AgentFileDefinition }

/** An agent's integrations, as ids, in the forms the agent row stores. */
interface ResolvedIntegrations { ids: string[]; promptOrder: string[]; promptWhen: PromptWhen }

/**
 * Makes the agents defined by `dir`'s *.chatmd files match the files. Only agents whose file lies in
 * this directory are touched: an API-defined agent with the same name is a conflict, never
 * overwritten. A file that fails to parse keeps its last good version in the database.
 */
export async function syncAgentFiles(db: Db, dirInput: string, llmKeyEnvs: readonly string[] = DEFAULT_LLM_KEY_ENVS): Promise<SyncReport> {
  const dir = path.resolve(dirInput);
  const report: SyncReport = { changed: [], unchanged: [], removed: [], disabled: [], errors: [], references: [] };
  const files = await listAgentFiles(dir);
  const parsed: ParsedFile[] = [];
  for (const file of files) {
    const one = await parseAgentFile(file, llmKeyEnvs, report);
    if (one) parsed.push(one);
  }
  await inTransaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [SYNC_LOCK_KEY]);
    const withSubAgents: FileSubAgents[] = [];
    for (const one of parsed) {
      const stored = await storeFileAgent(tx, one, report);
      if (stored) withSubAgents.push(stored);
    }
    // Once every file agent is stored: a file may name an agent another file defines.
    for (const name of await syncFileSubAgents(tx, withSubAgents, report.errors)) {
      if (!report.changed.includes(name)) {
        report.changed.push(name);
        report.unchanged = report.unchanged.filter((n) => n !== name);
      }
    }
    await removeAgentsOfGoneFiles(tx, dir, files, report);
  });
  return report;
}

async function listAgentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isFile() && e.name.endsWith(AGENT_FILE_EXTENSION))
    .map((e) => path.join(dir, e.name))
    .sort();
}

/** The file's agent, with the names it refers to in the report; undefined (an error reported) for a bad file. */
async function parseAgentFile(file: string, llmKeyEnvs: readonly string[], report: SyncReport): Promise<ParsedFile | undefined> {
  const name = path.basename(file, AGENT_FILE_EXTENSION);
  const by = `agent file ${path.basename(file)}`;
  try {
    if (!AGENT_NAME.test(name)) {
      throw new AgentFileError(file, 1, `the file name "${name}" is not a valid agent name (letters, digits, "_", "-", "." up to 64)`);
    }
    // Before parsing: a file the operator is still fixing keeps its name.
    report.references.push({ kind: 'agent', name, by });
    const def = parseChatmd(file, await readFile(file, 'utf8'));
    report.references.push(...def.integrations.map((ref) => ({ kind: 'integration' as const, name: ref, by })));
    report.references.push(...def.subAgents.map((ref) => ({ kind: 'agent' as const, name: ref, by })));
    // Files are the operator's, but a key name they did not allow is still refused (the worker refuses it too).
    const refused = apiKeyEnvProblem(def.model, llmKeyEnvs);
    if (refused) throw new AgentFileError(file, def.configLine, `model.${refused}`);
    return { file, name, def };
  } catch (err) {
    if (!(err instanceof AgentFileError)) throw err;
    report.errors.push(err);
    return undefined;
  }
}

/**
 * Creates or updates the file's agent, unless its integrations are wrong or an agent of another
 * origin has its name (an error reported). Returns what its sub-agents are synced from.
 */
async function storeFileAgent(tx: Queryable, { file, name, def }: ParsedFile, report: SyncReport): Promise<FileSubAgents | undefined> {
  const integrations = await resolveIntegrations(tx, file, def);
  if (integrations instanceof AgentFileError) {
    report.errors.push(integrations);
    return undefined;
  }
  const existing = await findAgentOriginByName(tx, name);
  if (existing && existing.sourceFile !== file) {
    const owner = existing.sourceFile ? `by ${existing.sourceFile}` : 'through the API';
    report.errors.push(new AgentFileError(file, 1, `an agent named "${name}" is already defined ${owner}; this file is skipped`));
    return undefined;
  }
  const changed = await upsertFileAgent(tx, {
    name, sourceFile: file, description: def.description ?? null, instructions: def.instructions ?? null, model: def.model,
    integrationIds: integrations.ids, promptOrder: integrations.promptOrder, promptWhen: integrations.promptWhen,
    maxTurns: def.maxTurns ?? 20, mcpTasks: def.mcpTasks, limits: def.limits, template: def.template,
  }, existing?.id);
  (changed ? report.changed : report.unchanged).push(name);
  const stored = existing ?? await findAgentOriginByName(tx, name);
  return stored ? { file, agentId: stored.id, name, configLine: def.configLine, refs: def.subAgents } : undefined;
}

/**
 * The integrations the file names (the files' tenant's), as ids; an error when one is unknown, or
 * promptOrder or promptWhen names one the agent lacks.
 */
async function resolveIntegrations(tx: Queryable, file: string, def: AgentFileDefinition): Promise<ResolvedIntegrations | AgentFileError> {
  const { ids, unknown } = await resolveRefs(tx, 'integrations', FILE_TENANT_ID, def.integrations);
  if (unknown.length > 0) return new AgentFileError(file, def.configLine, `unknown integration(s): ${unknown.join(', ')}`);
  const promptOrder = await idsOfRefs(tx, 'integrations', FILE_TENANT_ID, def.promptOrder);
  const misordered = promptOrderProblem(def.promptOrder, promptOrder, ids);
  if (misordered) return new AgentFileError(file, def.configLine, `promptOrder: ${misordered}`);
  const whenRefs = Object.keys(def.promptWhen);
  const whenIds = await idsOfRefs(tx, 'integrations', FILE_TENANT_ID, whenRefs);
  const misplaced = promptOrderProblem(whenRefs, whenIds, ids);
  if (misplaced) return new AgentFileError(file, def.configLine, `promptWhen: ${misplaced}`);
  const promptWhen = Object.fromEntries(whenRefs.map((ref, i) => [whenIds[i] as string, def.promptWhen[ref]]));
  return { ids, promptOrder: promptOrder as string[], promptWhen };
}

/** The agents of this directory's files that are gone: removed, or disabled while threads or runs refer to them. */
async function removeAgentsOfGoneFiles(tx: Queryable, dir: string, files: string[], report: SyncReport): Promise<void> {
  const present = new Set(files);
  for (const agent of await listFileAgentsUnder(tx, dir)) {
    if (present.has(agent.sourceFile!)) continue;
    const outcome = await removeAgent(tx, agent.id);
    if (outcome === 'removed') report.removed.push(agent.name);
    if (outcome === 'disabled') report.disabled.push(agent.name);
  }
}

export interface AgentFileSync {
  /** the first sync's report (undefined when the directory does not exist) */
  initial: SyncReport | undefined;
  close(): void;
}

export interface AgentFileSyncOptions {
  db: Db;
  dir: string;
  logger: Logger;
  /** the variables model.apiKeyEnv may name (config.llmKeyEnvs) */
  llmKeyEnvs?: readonly string[];
  debounceMs?: number;
  /** called after every sync; tests wait on it */
  onSync?: (report: SyncReport) => void;
}

/** Syncs now, then again (debounced) whenever the directory changes, until closed. */
export async function startAgentFileSync(opts: AgentFileSyncOptions): Promise<AgentFileSync> {
  const { db, logger } = opts;
  const dir = path.resolve(opts.dir);
  // Every sync re-reads every file: a bad file is reported when its error appears or changes, not at every sync.
  let reported = new Set<string>();
  const runSync = async () => {
    const report = await syncAgentFiles(db, dir, opts.llmKeyEnvs);
    for (const err of report.errors) {
      if (!reported.has(err.message)) logger.error({ file: err.file, line: err.line }, `agent file rejected: ${err.message}`);
    }
    reported = new Set(report.errors.map((err) => err.message));
    if (report.changed.length + report.removed.length + report.disabled.length > 0) {
      logger.info({ dir, changed: report.changed, removed: report.removed, disabled: report.disabled }, 'agent files synced');
    }
    opts.onSync?.(report);
    return report;
  };
  let initial: SyncReport;
  try {
    initial = await runSync();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    logger.debug({ dir }, 'no agent files directory');
    return { initial: undefined, close: () => undefined };
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let closed = false;
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      // Chained: two syncs never overlap in this process, and a change during one triggers the next.
      running = running.then(() => (closed ? undefined : runSync())).catch((err: unknown) => {
        logger.error({ err, dir }, 'agent file sync failed');
      });
    }, opts.debounceMs ?? 200);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, schedule);
    watcher.on('error', (err) => logger.warn({ err, dir }, 'watching agent files stopped'));
  } catch (err) {
    logger.warn({ err, dir }, 'cannot watch agent files; they are synced at start only');
  }
  return {
    initial,
    close: () => {
      closed = true;
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
