import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { startAgentFileSync, type AgentFileSync } from '../core/agent-files/sync';
import { ConfigError, loadConfig, type AppConfig } from '../core/config';
import { migrate } from '../core/db/migrations';
import { createPool, type Db } from '../core/db/pool';
import { createLogger, type Logger } from '../core/logger';
import { buildApp } from './app';

export interface ApiServer {
  app: FastifyInstance;
  url: string;
  /** Stops accepting requests and waits for those in flight; the caller owns db and client. */
  close(): Promise<void>;
}

/** Listens on config.host:config.port. The dev supervisor calls this to run the API in-process. */
export async function startApiServer(
  config: AppConfig,
  deps: { db: Db; client: Client; logger: Logger },
): Promise<ApiServer> {
  // The composition root: imported MCP configs expand ${VAR} from this process's environment.
  const app = await buildApp({
    ...deps, taskQueue: config.taskQueue, apiKey: config.apiKey, env: process.env, rateLimitPerMinute: config.rateLimitPerMinute,
  });
  let agentFiles: AgentFileSync | undefined;
  try {
    // Agent files are synced here, so every API process (and npm start) keeps the database in step with AGENTS_DIR.
    agentFiles = await startAgentFileSync({ db: deps.db, dir: config.agentsDir, logger: deps.logger });
    const url = await app.listen({ host: config.host, port: config.port });
    const files = agentFiles;
    return { app, url, close: () => { files.close(); return app.close(); } };
  } catch (err) {
    agentFiles?.close();
    await app.close();
    throw err;
  }
}

/** `npm run api`: a stand-alone API process against DATABASE_URL and TEMPORAL_ADDRESS. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'api');
  if (!config.databaseUrl) {
    throw new ConfigError('DATABASE_URL is required for a stand-alone API (npm start runs an embedded PostgreSQL).');
  }
  const db = createPool(config.databaseUrl, logger);
  let connection: Connection | undefined;
  let server: ApiServer | undefined;
  const closeAll = async () => {
    await server?.close();
    await connection?.close();
    await db.end();
  };
  try {
    await migrate(db);
    connection = await Connection.connect({
      ...config.temporalConnect.connectionOptions,
      address: config.temporalAddress ?? config.temporalConnect.connectionOptions.address ?? 'localhost:7233',
    });
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
