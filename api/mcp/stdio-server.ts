import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadConfig, type AppConfig } from '../../core/config';
import { engineStateFile, readEngineState } from '../../core/engine-state';
import { agentListVersion } from '../../core/db/file-agents';
import { migrate } from '../../core/db/migrations';
import { createPool } from '../../core/db/pool';
import { listenForRunChanges } from '../../core/db/run-changes';
import { createLogger } from '../../core/logger';
import { createAgentMcpServer } from './agent-server';
import { memoryCallRegistry } from './call-registry';

// Agents change in other processes (file sync, the API); a desktop client learns of it from list_changed.
const LIST_POLL_MS = 2_000;

/**
 * `agent-engine mcp`: the agents as an MCP server over stdio, for desktop clients that launch it.
 * It starts runs through Temporal like the API and runs no worker. stdout carries the protocol
 * and nothing else: logs go to stderr. Resolves when the client closes stdin.
 */
export async function runMcpStdio(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = loadConfig(env);
  const target = await engineToServe(config);
  const logger = createLogger(config.logLevel, 'mcp-stdio');
  const db = createPool(target.databaseUrl, logger, 4);
  let connection: Connection | undefined;
  try {
    await migrate(db);
    connection = await Connection.connect({ ...config.temporalConnect.connectionOptions, address: target.temporalAddress });
  } catch (err) {
    await db.end();
    throw err;
  }
  const client = new Client({ connection, namespace: target.temporalNamespace });
  // Calls wait on run changes like the API's, on a LISTEN connection held only while one is in flight.
  const changes = listenForRunChanges(db, logger, { onDemand: true });
  const server = createAgentMcpServer({ db, client, taskQueue: target.taskQueue, logger, changes }, { registry: memoryCallRegistry(), listChanged: true, askApprovals: true });

  let version = await agentListVersion(db);
  const poll = setInterval(() => {
    agentListVersion(db).then(async (next) => {
      if (next === version) return;
      version = next;
      await server.sendToolListChanged();
      await server.sendPromptListChanged();
    }).catch((err: unknown) => logger.warn({ err }, 'checking the agent list failed'));
  }, LIST_POLL_MS);

  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  const transport = new StdioServerTransport();
  await server.connect(transport);
  // The transport does not notice the end of stdin by itself: the client quitting must end this process.
  process.stdin.once('end', () => void server.close());
  logger.info({ taskQueue: target.taskQueue, source: target.source }, 'MCP stdio server ready');
  await closed;
  clearInterval(poll);
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
      + 'start one with npm start and the same DATA_DIR, or set DATABASE_URL and TEMPORAL_ADDRESS');
  }
  return {
    databaseUrl: config.databaseUrl ?? running.databaseUrl, temporalAddress: config.temporalAddress ?? running.temporalAddress,
    temporalNamespace: running.temporalNamespace, taskQueue: running.taskQueue, source: 'data dir',
  };
}
