import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../platform/logger';
import type { Db } from '../pool';
import { syncAgentFiles, type SyncReport } from './sync';

export interface AgentFileSync {
  /** the first sync's report (undefined when the directory does not exist) */
  initial: SyncReport | undefined;
  /**
   * Syncs again now, after any sync under way (a tenant was created: the files that serve it
   * define their agents there); undefined when the directory does not exist or the sync is closed.
   */
  resync(): Promise<SyncReport | undefined>;
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
  const { logger } = opts;
  const dir = path.resolve(opts.dir);
  const runSync = reportingSync(opts, dir);
  let initial: SyncReport;
  try {
    initial = await runSync();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    logger.debug({ dir }, 'no agent files directory');
    return { initial: undefined, resync: () => Promise.resolve(undefined), close: () => undefined };
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let closed = false;
  // Chained: two syncs never overlap in this process, and a change during one triggers the next.
  const enqueue = (): Promise<SyncReport | undefined> => {
    const next = running.then(() => (closed ? undefined : runSync()));
    running = next.catch((err: unknown) => logger.error({ err, dir }, 'agent file sync failed'));
    return next;
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void enqueue().catch(() => undefined), opts.debounceMs ?? 200);
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
    resync: enqueue,
    close: () => {
      closed = true;
      clearTimeout(timer);
      watcher?.close();
    },
  };
}

/**
 * One sync that logs what it did. Every sync re-reads every file: a bad file (or a tenant a file
 * waits for) is reported when its message appears or changes, not at every sync.
 */
function reportingSync(opts: AgentFileSyncOptions, dir: string): () => Promise<SyncReport> {
  const { db, logger } = opts;
  let reported = new Set<string>();
  return async () => {
    const report = await syncAgentFiles(db, dir, opts.llmKeyEnvs);
    for (const err of report.errors) {
      if (!reported.has(err.message)) logger.error({ file: err.file, line: err.line }, `agent file rejected: ${err.message}`);
    }
    for (const waiting of report.waiting) {
      if (!reported.has(waiting)) logger.info({ dir }, `agent file waits for a tenant: ${waiting}`);
    }
    reported = new Set([...report.errors.map((err) => err.message), ...report.waiting]);
    if (report.changed.length + report.removed.length + report.disabled.length > 0) {
      logger.info({ dir, changed: report.changed, removed: report.removed, disabled: report.disabled }, 'agent files synced');
    }
    opts.onSync?.(report);
    return report;
  };
}
