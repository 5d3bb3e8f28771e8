import { setFlagsFromString } from 'node:v8';
import type { NativeConnection } from '@temporalio/worker';
import type { Registry } from 'prom-client';
import type { ActivityDeps } from '../activities/deps';
import { loadConfig, type AppConfig } from '../platform/config';
import { migrate } from '../store/migrations';
import { createPool } from '../store/pool';
import { openSecretStore } from '../store/secrets/open-secret-store';
import { connectTemporal, installTemporalRuntime } from '../platform/temporal/native-connection';
import { relayedMetrics, temporalMetricsExport, type TemporalMetricsExport } from '../platform/temporal/runtime-metrics';
import { createLogger, type Logger } from '../platform/logger';
import { SearchAttributeGuard } from '../platform/temporal/search-attributes';
import { lowerPriority } from '../platform/processes';
import { createEngineWorker, createPinnedMcpWorker, EngineWorker } from './create-worker';
import { openWorkerDeps } from './worker-deps';
import { workflowCode } from './versioning';
import { startMetricsServer, type MetricsServer } from '../platform/metrics/metrics-server';
import { startOtlpMetricsExport } from '../platform/metrics/otlp-export';

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
  // The SDK's own metrics: by OTLP when configured, else served when TEMPORAL_METRICS_PORT is set.
  const temporalMetrics = await temporalMetricsExport(config.metrics, config.metrics.temporalPort !== undefined);
  installTemporalRuntime('WARN', temporalMetrics?.exporter);
  const stop = new StopRequest(logger);
  logger.info({ pid: process.pid }, 'worker starting');

  const db = createPool(config.databaseUrl, logger);
  await migrate(db);
  await openSecretStore(db, config.secretKeys, logger);
  const connection = await connectTemporal(config);
  await addSearchAttributes(new SearchAttributeGuard(connection, config.temporalNamespace, logger), logger);
  const { deps, metrics, close: closeDeps } = await openWorkerDeps(config, db, logger);
  // Before the workers: a port that is taken stops the start before any run is taken.
  const metricsServer = await serveMetrics(config, metrics?.registry, logger);
  const temporalMetricsServer = await serveTemporalMetrics(config, temporalMetrics, logger);
  const otlp = metrics && config.metrics.otlp && startOtlpMetricsExport(config.metrics.otlp, metrics.registry, logger);
  const workers = await createWorkers(config, connection, deps, logger);
  try {
    await stop.runUntilStopped(workers, () => {
      logger.info({ taskQueue: config.taskQueue, mcpTaskQueues: config.mcpTaskQueues, pid: process.pid }, 'worker started');
    });
  } finally {
    await metricsServer?.close();
    await temporalMetricsServer?.close();
    await otlp?.shutdown();
    // After the worker: its last activities may still be calling MCP tools during the grace time.
    await closeDeps();
    await connection.close();
    await db.end();
    logger.info('worker stopped');
  }
}

/**
 * SIGINT and SIGTERM, heard from the start: an orchestrator may stop a worker that is still starting.
 * It then finishes its start-up steps, runs nothing, and closes what it opened, exiting 0 like any clean stop.
 */
class StopRequest {
  private requested = false;
  private workers: EngineWorker | undefined;

  constructor(private readonly logger: Logger) {
    process.once('SIGINT', () => this.stop('SIGINT'));
    process.once('SIGTERM', () => this.stop('SIGTERM'));
  }

  /** Runs the workers until a stop, or a fatal error of one of them (it rejects then). */
  async runUntilStopped(workers: EngineWorker, onStarted: () => void): Promise<void> {
    this.workers = workers;
    if (this.requested) {
      // A worker that was made must be shut down to let go of the connection: started and stopped at once.
      await workers.runUntil(Promise.resolve());
      return;
    }
    onStarted();
    await workers.run();
  }

  private stop(signal: string): void {
    this.logger.info({ signal }, 'shutting down the worker');
    this.requested = true;
    this.workers?.shutdown();
  }
}

/** The engine's worker, and one for each queue of pinned integrations' discovery and tool calls (MCP_TASK_QUEUES). */
async function createWorkers(config: AppConfig, connection: NativeConnection, deps: ActivityDeps, logger: Logger): Promise<EngineWorker> {
  const code = await workflowCode({ deployment: config.workerDeployment, workflowBundlePath: config.workflowBundlePath });
  if (code.version) logger.info({ ...code.version }, 'worker versioned: runs it starts are pinned to this build');
  const { temporalNamespace: namespace } = config;
  const worker = await createEngineWorker({
    connection, namespace, taskQueue: config.taskQueue, deps, code, toolSlots: config.toolCallSlots,
  });
  const pinnedWorkers = await Promise.all(config.mcpTaskQueues.map((taskQueue) =>
    createPinnedMcpWorker({ connection, namespace, taskQueue, deps, ...(code.version ? { version: code.version } : {}) })));
  return new EngineWorker([worker, ...pinnedWorkers]);
}

/** Prometheus metrics on METRICS_HOST:METRICS_PORT, when METRICS_PORT is set. */
async function serveMetrics(config: AppConfig, registry: Registry | undefined, logger: Logger): Promise<MetricsServer | undefined> {
  if (config.metrics.port === undefined || !registry) return undefined;
  const server = await startMetricsServer({ ...config.metrics, port: config.metrics.port, registry });
  logger.info({ url: server.url }, 'worker metrics served');
  return server;
}

/** The Temporal SDK's metrics on METRICS_HOST:TEMPORAL_METRICS_PORT, relayed from the SDK's loopback port. */
async function serveTemporalMetrics(
  config: AppConfig, temporal: TemporalMetricsExport | undefined, logger: Logger,
): Promise<MetricsServer | undefined> {
  if (config.metrics.temporalPort === undefined || !temporal?.sdkUrl) return undefined;
  const registry = relayedMetrics(temporal.sdkUrl);
  const server = await startMetricsServer({ ...config.metrics, port: config.metrics.temporalPort, registry });
  logger.info({ url: server.url }, 'Temporal SDK metrics served');
  return server;
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
  const own = process.execArgv.some((a) => a.replace(/_/g, '-').startsWith('--heap-growing-percent'));
  if (!own) setFlagsFromString('--heap-growing-percent=30');
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
