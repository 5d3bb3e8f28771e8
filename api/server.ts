import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { startAgentFileSync, type AgentFileSync } from '../store/agent-files/watch-agent-files';
import { checkApiExposure, ConfigError, loadConfig, type AppConfig } from '../platform/config';
import { migrate } from '../store/migrations';
import { createPool, createSiblingPool, type Db } from '../store/pool';
import { createLogger, type Logger } from '../platform/logger';
import { createOperatorNames, type OperatorNames } from '../platform/operator-names';
import type { Tenant } from '../core/tenancy';
import { openSecretStore } from '../store/secrets/open-secret-store';
import { connectTemporal, installTemporalRuntime } from '../platform/temporal/native-connection';
import { readPriceTable } from '../platform/prices-file';
import { buildApp } from './app';
import { loadIntegrationsFile } from '../use-cases/integrations/integrations-file';
import { ApiMetrics, type PoolStats } from '../platform/metrics/api-metrics';
import { startMetricsServer, type MetricsServer } from '../platform/metrics/metrics-server';
import { startOtlpMetricsExport } from '../platform/metrics/otlp-export';
import { countWaitingRuns } from '../store/runs/waiting-runs';

export interface ApiServer {
  app: FastifyInstance;
  url: string;
  /** where its Prometheus metrics are served, when they are */
  metricsUrl?: string;
  /** Stops accepting requests and waits for those in flight; the caller owns db and client. */
  close(): Promise<void>;
}

/** Connections for reading runs, beside the pool's 10 for everything else (see AppDeps.reads). */
const RUN_READ_CONNECTIONS = 4;

/** How long requests in flight may take to finish once the server closes; then their connections are cut. */
const CLOSE_GRACE_MS = 5_000;

/**
 * Closing waits for every connection to end, and a keep-alive connection that was busy when the
 * close began (a long poll, a client's loop) would otherwise live on until its keep-alive timeout
 * (72 s): close each as soon as it falls idle, and cut the rest after the grace period.
 */
async function closeWithin(app: FastifyInstance, graceMs: number): Promise<void> {
  const idle = setInterval(() => app.server.closeIdleConnections(), 100);
  const cut = setTimeout(() => app.server.closeAllConnections(), graceMs);
  try {
    await app.close();
  } finally {
    clearInterval(idle);
    clearTimeout(cut);
  }
}

/** Listens on config.host:config.port. The dev supervisor calls this to run the API in-process. */
export async function startApiServer(
  config: AppConfig,
  deps: { db: Db; client: Client; logger: Logger; temporalUiUrl?: string; metricsPort?: number },
): Promise<ApiServer> {
  checkApiExposure(config);
  const reads = createSiblingPool(deps.db, deps.logger, RUN_READ_CONNECTIONS);
  // npm start passes a port of its own (0: any free one); `npm run api` serves metrics when METRICS_PORT is set,
  // and sends them when OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is.
  const metricsPort = deps.metricsPort ?? config.metrics.port;
  const metrics = metricsPort === undefined && !config.metrics.otlp ? undefined
    : new ApiMetrics({
      maxLabelValues: config.metrics.maxLabelValues, pools: { main: poolStats(deps.db), reads: poolStats(reads) },
      waitingRuns: () => countWaitingRuns(reads),
    });
  // Filled from the files below before the API listens, and kept in step with AGENTS_DIR.
  const operatorNames = createOperatorNames();
  // The composition root: imported MCP configs expand ${VAR} from this process's environment.
  const files = new OperatorFiles(config, deps.db, deps.logger, operatorNames);
  const app = await buildApp({
    ...deps, reads, operatorNames, onTenantCreated: (tenant) => files.syncTenant(tenant), taskQueue: config.taskQueue,
    apiKey: config.apiKey, adminApiKey: config.adminApiKey, env: process.env,
    rateLimitPerMinute: config.rateLimitPerMinute, listenHost: config.host, allowedHosts: config.allowedHosts,
    corsOrigins: config.corsOrigins, llmKeyEnvs: config.llmKeyEnvs, publicUrl: config.publicUrl, tokenAuth: config.tokenAuth,
    mcpRequestStateKey: config.mcpRequestStateKey, mcpAgentTasks: config.mcpAgentTasks,
    temporalUiUrl: deps.temporalUiUrl ?? config.temporalUiUrl, metrics,
    ...(config.pricesFile ? { prices: await readPriceTable(config.pricesFile) } : {}),
  }).catch(async (err: unknown) => {
    await reads.end();
    throw err;
  });
  // After the requests that read through it have ended.
  app.addHook('onClose', () => reads.end());
  let metricsServer: MetricsServer | undefined;
  try {
    await files.start();
    if (metrics && metricsPort !== undefined) {
      metricsServer = await startMetricsServer({ ...config.metrics, port: metricsPort, registry: metrics.registry });
    }
    const url = await app.listen({ host: config.host, port: config.port });
    const otlp = metrics && config.metrics.otlp && startOtlpMetricsExport(config.metrics.otlp, metrics.registry, deps.logger);
    const close = async () => {
      files.close();
      await metricsServer?.close();
      await closeWithin(app, CLOSE_GRACE_MS);
      await otlp?.shutdown();
    };
    return { app, url, metricsUrl: metricsServer?.url, close };
  } catch (err) {
    files.close();
    await metricsServer?.close();
    await app.close();
    throw err;
  }
}

const poolStats = (pool: Db) => (): PoolStats => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });

/**
 * The operator's files, INTEGRATIONS_FILE and AGENTS_DIR, kept in the database and in the names
 * they reserve: loaded at start, AGENTS_DIR followed as it changes, and both again when this process
 * creates a tenant (the objects that serve every tenant appear in it). Other API processes see the
 * new tenant's objects in the database; they reserve its names at their next sync.
 */
class OperatorFiles {
  private agentFiles: AgentFileSync | undefined;

  constructor(
    private readonly config: AppConfig, private readonly db: Db, private readonly logger: Logger, private readonly names: OperatorNames,
  ) {}

  async start(): Promise<void> {
    // Before agent files, which may name these integrations.
    await this.loadIntegrations();
    // Agent files are synced here, so every API process (and npm start) keeps the database in step with AGENTS_DIR.
    this.agentFiles = await startAgentFileSync({
      db: this.db, dir: this.config.agentsDir, logger: this.logger, llmKeyEnvs: this.config.llmKeyEnvs,
      onSync: (report) => this.names.replace('AGENTS_DIR', report.references),
    });
  }

  /** A tenant was just created: failures are logged, the tenant stays (the next sync tries again). */
  async syncTenant(tenant: Tenant): Promise<void> {
    const failed = (what: string) => (err: unknown) => this.logger.error({ err, tenant: tenant.name }, `${what} failed`);
    await this.loadIntegrations().catch(failed('loading INTEGRATIONS_FILE'));
    await this.agentFiles?.resync().catch(failed('agent file sync'));
  }

  close(): void {
    this.agentFiles?.close();
  }

  private async loadIntegrations(): Promise<void> {
    const file = this.config.integrationsFile;
    if (!file) return;
    const loaded = await loadIntegrationsFile({ db: this.db, file, env: process.env, logger: this.logger });
    this.names.replace('INTEGRATIONS_FILE', loaded.references);
  }
}

/** `npm run api`: a stand-alone API process against DATABASE_URL and TEMPORAL_ADDRESS. */
async function main(): Promise<void> {
  const config = loadConfig();
  checkApiExposure(config);
  const logger = createLogger(config.logLevel, 'api');
  if (!config.databaseUrl) {
    throw new ConfigError('DATABASE_URL is required for a stand-alone API (npm start runs an embedded PostgreSQL).');
  }
  const db = createPool(config.databaseUrl, logger);
  let connection: NativeConnection | undefined;
  let server: ApiServer | undefined;
  const closeAll = async () => {
    await server?.close();
    await connection?.close();
    await db.end();
  };
  try {
    await migrate(db);
    await openSecretStore(db, config.secretKeys, logger);
    installTemporalRuntime();
    connection = await connectTemporal(config);
    const client = new Client({ connection, namespace: config.temporalNamespace });
    server = await startApiServer(config, { db, client, logger });
  } catch (err) {
    await closeAll().catch(() => undefined);
    throw err;
  }
  const { url, metricsUrl } = server;
  logger.info({ url, metricsUrl, taskQueue: config.taskQueue, auth: Boolean(config.apiKey) }, 'API listening');

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down the API');
    closeAll().then(
      () => logger.info('API stopped'),
      (err: unknown) => {
        logger.error({ err }, 'API shutdown failed');
        process.exitCode = 1;
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    const text = err instanceof ConfigError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
    process.stderr.write(`${text}\n`);
    process.exit(1);
  });
}
