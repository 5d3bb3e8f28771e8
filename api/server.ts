import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { startAgentFileSync, type AgentFileSync } from '../store/agent-files/sync';
import { checkApiExposure, ConfigError, loadConfig, type AppConfig } from '../platform/config';
import { migrate } from '../store/migrations';
import { createPool, createSiblingPool, type Db } from '../store/pool';
import { createLogger, type Logger } from '../platform/logger';
import { createOperatorNames } from '../platform/operator-names';
import { openSecretStore } from '../store/secrets/open-secret-store';
import { connectTemporal, installTemporalRuntime } from '../platform/temporal/native-connection';
import { buildApp } from './app';
import { loadIntegrationsFile } from '../use-cases/integrations/integrations-file';

export interface ApiServer {
  app: FastifyInstance;
  url: string;
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
  deps: { db: Db; client: Client; logger: Logger; temporalUiUrl?: string },
): Promise<ApiServer> {
  checkApiExposure(config);
  const reads = createSiblingPool(deps.db, deps.logger, RUN_READ_CONNECTIONS);
  // Filled from the files below before the API listens, and kept in step with AGENTS_DIR.
  const operatorNames = createOperatorNames();
  // The composition root: imported MCP configs expand ${VAR} from this process's environment.
  const app = await buildApp({
    ...deps, reads, operatorNames, taskQueue: config.taskQueue, apiKey: config.apiKey, adminApiKey: config.adminApiKey, env: process.env,
    rateLimitPerMinute: config.rateLimitPerMinute, listenHost: config.host, allowedHosts: config.allowedHosts,
    corsOrigins: config.corsOrigins, llmKeyEnvs: config.llmKeyEnvs, publicUrl: config.publicUrl, tokenAuth: config.tokenAuth,
    mcpRequestStateKey: config.mcpRequestStateKey, mcpAgentTasks: config.mcpAgentTasks,
    temporalUiUrl: deps.temporalUiUrl ?? config.temporalUiUrl,
  }).catch(async (err: unknown) => {
    await reads.end();
    throw err;
  });
  // After the requests that read through it have ended.
  app.addHook('onClose', () => reads.end());
  let agentFiles: AgentFileSync | undefined;
  try {
    // Before agent files, which may name these integrations.
    if (config.integrationsFile) {
      const loaded = await loadIntegrationsFile({ db: deps.db, file: config.integrationsFile, env: process.env, logger: deps.logger });
      operatorNames.replace('INTEGRATIONS_FILE', [...loaded.created, ...loaded.updated, ...loaded.unchanged]
        .map((name) => ({ kind: 'integration', name, by: 'INTEGRATIONS_FILE' })));
    }
    // Agent files are synced here, so every API process (and npm start) keeps the database in step with AGENTS_DIR.
    agentFiles = await startAgentFileSync({
      db: deps.db, dir: config.agentsDir, logger: deps.logger, llmKeyEnvs: config.llmKeyEnvs,
      onSync: (report) => operatorNames.replace('AGENTS_DIR', report.references),
    });
    const url = await app.listen({ host: config.host, port: config.port });
    const files = agentFiles;
    return { app, url, close: () => { files.close(); return closeWithin(app, CLOSE_GRACE_MS); } };
  } catch (err) {
    agentFiles?.close();
    await app.close();
    throw err;
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
  logger.info({ url: server.url, taskQueue: config.taskQueue, auth: Boolean(config.apiKey) }, 'API listening');

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
