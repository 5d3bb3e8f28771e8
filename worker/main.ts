import { setFlagsFromString } from 'node:v8';
import { loadConfig } from '../platform/config';
import { migrate } from '../store/migrations';
import { createPool } from '../store/pool';
import { openSecretStore } from '../store/secrets/open-secret-store';
import { connectTemporal, installTemporalRuntime } from '../platform/temporal/native-connection';
import { createLogger, type Logger } from '../platform/logger';
import { SearchAttributeGuard } from '../platform/temporal/search-attributes';
import { lowerPriority } from '../platform/processes';
import { createEngineWorker, createPinnedMcpWorker } from './create-worker';
import { openWorkerDeps } from './worker-deps';
import { workflowCode } from './versioning';

/** The worker process: `npm run worker`, against TEMPORAL_ADDRESS and DATABASE_URL. */
async function main(): Promise<void> {
  keepHeapNearLiveSize();
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  // Throughput work: where it shares CPUs with the API or PostgreSQL, they answer first (a GET of a
  // run waits on none of its work); the MCP servers it starts inherit it. Under load on 2 cores the
  // API's GET p99 fell from 35-196 ms to 16-67 ms (`npm run bench:load`), runs/s unchanged.
  lowerPriority(config.workerNice, logger);
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required for a stand-alone worker (npm start runs an embedded one).');
  installTemporalRuntime();

  // From the start: an orchestrator may stop a worker that is still starting. It then finishes its
  // start-up steps, runs nothing, and closes what it opened, exiting 0 like any clean stop.
  let stopRequested = false;
  let stopAll = () => {};
  const stop = (signal: string) => {
    logger.info({ signal }, 'shutting down the worker');
    stopRequested = true;
    stopAll();
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  logger.info({ pid: process.pid }, 'worker starting');

  const db = createPool(config.databaseUrl, logger);
  await migrate(db);
  await openSecretStore(db, config.secretKeys, logger);
  const connection = await connectTemporal(config);
  await addSearchAttributes(new SearchAttributeGuard(connection, config.temporalNamespace, logger), logger);
  const { deps, close: closeDeps } = await openWorkerDeps(config, db, logger);
  const code = await workflowCode({ deployment: config.workerDeployment, workflowBundlePath: config.workflowBundlePath });
  if (code.version) logger.info({ ...code.version }, 'worker versioned: runs it starts are pinned to this build');
  const worker = await createEngineWorker({
    connection, namespace: config.temporalNamespace, taskQueue: config.taskQueue, deps, code, toolSlots: config.toolCallSlots,
  });
  // Pinned integrations' discovery and tool calls come on their own queues (MCP_TASK_QUEUES).
  const pinnedWorkers = await Promise.all(config.mcpTaskQueues.map((taskQueue) =>
    createPinnedMcpWorker({ connection, namespace: config.temporalNamespace, taskQueue, deps, ...(code.version ? { version: code.version } : {}) })));
  const workers = [worker, ...pinnedWorkers];
  stopAll = () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
  };
  try {
    if (stopRequested) {
      // A worker that was made must be shut down to let go of the connection: started and stopped at once.
      await Promise.all(workers.map((w) => w.runUntil(Promise.resolve())));
    } else {
      logger.info({ taskQueue: config.taskQueue, mcpTaskQueues: config.mcpTaskQueues, pid: process.pid }, 'worker started');
      // One worker ending (a fatal error) ends the others too, so that the process exits whole.
      const ended = await Promise.allSettled(workers.map((w) => w.run().finally(stopAll)));
      const failure = ended.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) throw failure.reason;
    }
  } finally {
    // After the worker: its last activities may still be calling MCP tools during the grace time.
    await closeDeps();
    await connection.close();
    await db.end();
    logger.info('worker stopped');
  }
}

/**
 * A cluster comes without the search attributes runs start with: the worker adds them where it may,
 * before it polls. Where it may not, it runs all the same (runs already started go on), and the
 * guard logs what the operator must add; the API's /readyz and run starts say it too.
 */
async function addSearchAttributes(guard: SearchAttributeGuard, logger: Logger): Promise<void> {
  await guard.refresh().catch((err: unknown) => logger.warn({ err }, 'could not check the namespace\'s search attributes'));
}

/**
 * Under load a worker allocates fast and keeps little (about 45 MB live): V8 then lets its heap grow
 * to several times that before a full collection, and the RSS stays there once the load is gone
 * (260–370 MB idle after a burst of runs). Growing the heap by 30% at most per collection keeps
 * it near what is live (about 280 MB idle) for about 5% more of the worker's CPU time per run
 * (`npm run bench:load`). An operator's own --heap-growing-percent wins.
 */
function keepHeapNearLiveSize(): void {
  // Only the command line can carry it: Node refuses V8's heap flags in NODE_OPTIONS.
  if (!process.execArgv.some((a) => a.replace(/_/g, '-').startsWith('--heap-growing-percent'))) setFlagsFromString('--heap-growing-percent=30');
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
