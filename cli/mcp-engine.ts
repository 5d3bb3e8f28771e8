import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadConfig, type AppConfig } from '../platform/config';
import { engineStateFile, readEngineState } from '../platform/engine-state';
import { createLogger, type Logger } from '../platform/logger';
import { requestStateKey } from '../platform/secrets/request-state-key';
import { secretKey } from '../platform/secrets/secret-box';
import { SearchAttributeGuard } from '../platform/temporal/search-attributes';
import { migrate } from '../store/migrations';
import { createPool, type Db } from '../store/pool';
import { listenForRunChanges } from '../store/runs/change-feed';
import { serveAgentsOverStdio } from '../mcp-server/stdio-server';
import { apiKeyCaller, operatorCaller, type Caller } from '../use-cases/caller';
import { callerOfKey } from '../use-cases/tenants/api-keys';

/*
 * `agent-engine mcp`'s composition root: it finds the engine, opens its database (migrated) and a
 * Temporal client, and serves the agents over stdio with them (mcp-server/stdio-server.ts).
 */

/** The engine `agent-engine mcp` serves: its database (migrated) and a Temporal client. */
export interface StdioEngine {
  db: Db;
  connection: Connection;
  client: Client;
  taskQueue: string;
  logger: Logger;
  source: EngineTarget['source'];
  /** signs the requestState of approval questions to a 2026-era client */
  requestStateKey: Buffer;
  /** MCP_AGENT_TASKS */
  agentTasks: boolean;
  /** whom it serves: the operator, or the tenant and roles of AGENT_ENGINE_KEY */
  caller: Caller;
}

/**
 * Finds the engine and connects to it. Throws an error whose message says why it could not, for a
 * person (stderr) or an MCP client (serveStartFailure): a ConfigError when nothing says where it is.
 */
export async function openStdioEngine(env: NodeJS.ProcessEnv = process.env): Promise<StdioEngine> {
  const config = loadConfig(env);
  const target = await engineToServe(config);
  const logger = createLogger(config.logLevel, 'mcp-stdio');
  const db = createPool(target.databaseUrl, logger, 4);
  const cannot = (what: string) => (err: Error) =>
    Promise.reject(new Error(`agent-engine mcp cannot ${what} (from the ${target.source}): ${err.message}`));
  try {
    await migrate(db).catch(cannot('use the engine\'s database'));
    const caller = await stdioCaller(db, config, env.AGENT_ENGINE_KEY);
    const connection = await Connection.connect({ ...config.temporalConnect.connectionOptions, address: target.temporalAddress })
      .catch(cannot(`reach Temporal at ${target.temporalAddress}`));
    const client = new Client({ connection, namespace: target.temporalNamespace });
    // One process serves every round of this connection's questions, so a key of its own verifies
    // them all when the engine's configuration gives none.
    const configured = requestStateKey(config.mcpRequestStateKey, config.secretKeys.current && secretKey(config.secretKeys.current));
    return {
      db, connection, client, taskQueue: target.taskQueue, logger, source: target.source,
      requestStateKey: configured ?? randomBytes(32), agentTasks: config.mcpAgentTasks, caller,
    };
  } catch (err) {
    await db.end();
    throw err;
  }
}

/**
 * It opens the database itself, so it has the operator's reach; AGENT_ENGINE_KEY only narrows what
 * it serves to that key's tenant and roles (API_KEY's: the tenant `default`).
 */
async function stdioCaller(db: Db, config: AppConfig, key: string | undefined): Promise<Caller> {
  if (!key || key === config.adminApiKey) return operatorCaller();
  if (key === config.apiKey) return apiKeyCaller(false, operatorCaller().operatorHint);
  const caller = await callerOfKey(db, key);
  if (!caller) throw new Error('agent-engine mcp: AGENT_ENGINE_KEY is not a key of this engine (unknown, revoked or expired)');
  return caller;
}

/** Serves the engine's agents on stdin and stdout until the client closes stdin; then lets go of the engine. */
export async function serveEngineOverStdio(engine: StdioEngine): Promise<void> {
  const { db, logger, client, connection } = engine;
  // Calls wait on run changes like the API's, on a LISTEN connection held only while one is in flight.
  const changes = listenForRunChanges(db, logger, { onDemand: true });
  const searchAttributes = new SearchAttributeGuard(connection, client.options.namespace, logger);
  await serveAgentsOverStdio({ db, client, taskQueue: engine.taskQueue, logger, changes, searchAttributes }, engine);
  await changes.close();
  await connection.close();
  await db.end();
}

interface EngineTarget {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  source: 'environment' | 'data dir';
}

/**
 * DATABASE_URL and TEMPORAL_ADDRESS when both are set; otherwise the engine `npm start` runs on
 * DATA_DIR, as its engine.json says (its embedded PostgreSQL and Temporal change ports every start),
 * with either variable that is set taking precedence.
 */
async function engineToServe(config: AppConfig): Promise<EngineTarget> {
  if (config.databaseUrl && config.temporalAddress) {
    return {
      databaseUrl: config.databaseUrl, temporalAddress: config.temporalAddress, temporalNamespace: config.temporalNamespace,
      taskQueue: config.taskQueue, source: 'environment',
    };
  }
  const running = await readEngineState(config.dataDir);
  if (!running) {
    throw new ConfigError(`agent-engine mcp found no running engine in ${config.dataDir} (no live ${engineStateFile(config.dataDir)}): `
      + 'start one with npm start and the same DATA_DIR, or set DATABASE_URL and TEMPORAL_ADDRESS. An MCP client starts this command '
      + 'in a directory of its own, so set DATA_DIR to an absolute path (the .data directory of the checkout where npm start runs)');
  }
  return {
    databaseUrl: config.databaseUrl ?? running.databaseUrl, temporalAddress: config.temporalAddress ?? running.temporalAddress,
    temporalNamespace: running.temporalNamespace, taskQueue: running.taskQueue, source: 'data dir',
  };
}
