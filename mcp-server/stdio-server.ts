import { randomBytes } from 'node:crypto';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { Server, ProtocolErrorCode, type McpServerFactory } from '@modelcontextprotocol/server';
import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadConfig, type AppConfig } from '../platform/config';
import { engineStateFile, readEngineState } from '../platform/engine-state';
import { agentListVersion } from '../store/agent-files/file-agents';
import { migrate } from '../store/migrations';
import { createPool, type Db } from '../store/pool';
import { listenForRunChanges } from '../store/runs/change-feed';
import { createLogger, type Logger } from '../platform/logger';
import { mcpRequestError } from '../core/mcp-error-text';
import { requestStateKey } from '../platform/secrets/request-state-key';
import { secretKey } from '../platform/secrets/secret-box';
import { createAgentMcpServer, SERVER_INFO } from './agent-server';
import { approvalQuestions } from './approval-input';
import { memoryCallRegistry } from './call-registry';
import { extTasks } from '../platform/ext-tasks';
import { SearchAttributeGuard } from '../platform/temporal/search-attributes';

// Agents change in other processes (file sync, the API); a desktop client learns of it from list_changed.
const LIST_POLL_MS = 2_000;

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
  try {
    await migrate(db).catch((err: Error) => Promise.reject(new Error(`agent-engine mcp cannot use the engine's database (from the ${target.source}): ${err.message}`)));
    const connection = await Connection.connect({ ...config.temporalConnect.connectionOptions, address: target.temporalAddress })
      .catch((err: Error) => Promise.reject(new Error(`agent-engine mcp cannot reach Temporal at ${target.temporalAddress} (from the ${target.source}): ${err.message}`)));
    const client = new Client({ connection, namespace: target.temporalNamespace });
    // One process serves every round of this connection's questions, so a key of its own verifies
    // them all when the engine's configuration gives none.
    const stateKey = requestStateKey(config.mcpRequestStateKey, config.secretKeys.current && secretKey(config.secretKeys.current)) ?? randomBytes(32);
    return { db, connection, client, taskQueue: target.taskQueue, logger, source: target.source, requestStateKey: stateKey, agentTasks: config.mcpAgentTasks };
  } catch (err) {
    await db.end();
    throw err;
  }
}

/**
 * `agent-engine mcp`: the agents as an MCP server over stdio, for desktop clients that launch it.
 * It starts runs through Temporal like the API and runs no worker. stdout carries the protocol
 * and nothing else: logs go to stderr. Resolves when the client closes stdin.
 */
export async function serveAgentsOverStdio(engine: StdioEngine): Promise<void> {
  const { db, logger, client, connection } = engine;
  // Calls wait on run changes like the API's, on a LISTEN connection held only while one is in flight.
  const changes = listenForRunChanges(db, logger, { onDemand: true });
  const deps = { db, client, taskQueue: engine.taskQueue, logger, changes, searchAttributes: new SearchAttributeGuard(connection, client.options.namespace, logger) };
  // One connection per process: request ids are unique for its lifetime.
  const registry = memoryCallRegistry();
  const approvals = approvalQuestions(deps, engine.requestStateKey, 'stdio');
  // The person at this stdio client is local: their tasks are the local scope's.
  const ext = engine.agentTasks ? await extTasks() : undefined;
  // The instances serving the connection (serveStdio may build one for a discovery probe first).
  const servers = new Set<Server>();
  const factory: McpServerFactory = ({ era }) => {
    // 2025: list_changed is sent as it comes, and approvals are asked with elicitation/create;
    // 2026: list_changed reaches the client's subscriptions/listen, approvals come as input_required.
    // Closed with the connection: its calls stop following their runs (which go on), its tasks' notices stop.
    const closed = new AbortController();
    const server = createAgentMcpServer(deps, {
      era, registry, listChanged: true, askApprovals: era === 'legacy', approvals: era === 'modern' ? approvals : undefined,
      stop: closed.signal, tasks: ext && { ext, scope: 'local', notifyUntil: closed.signal },
    });
    servers.add(server);
    server.onclose = () => {
      servers.delete(server);
      closed.abort();
    };
    return server;
  };

  let version = await agentListVersion(db);
  const poll = setInterval(() => {
    agentListVersion(db).then(async (next) => {
      if (next === version) return;
      version = next;
      for (const server of servers) {
        await server.sendToolListChanged();
        await server.sendPromptListChanged();
      }
    }).catch((err: unknown) => logger.warn({ err }, 'checking the agent list failed'));
  }, LIST_POLL_MS);

  await serveUntilStdinEnds(factory, logger, () => logger.info({ taskQueue: engine.taskQueue, source: engine.source }, 'MCP stdio server ready'));
  clearInterval(poll);
  await changes.close();
  await connection.close();
  await db.end();
}

/**
 * When no engine could be found, a client that launched this command would see only "Connection
 * closed" (clients hide stderr). So it is served anyway: every request fails with the reason (and a
 * 2025 client also gets it as an error log message at initialize), until the client closes stdin.
 */
export async function serveStartFailure(reason: string): Promise<void> {
  const fail = async (): Promise<never> => {
    throw mcpRequestError(ProtocolErrorCode.InternalError, reason);
  };
  const factory: McpServerFactory = ({ era }) => {
    const server = new Server(SERVER_INFO, { capabilities: { tools: {}, prompts: {}, ...(era === 'legacy' ? { logging: {} } : {}) } });
    server.setRequestHandler('tools/list', fail);
    server.setRequestHandler('tools/call', fail);
    server.setRequestHandler('prompts/list', fail);
    server.setRequestHandler('prompts/get', fail);
    server.oninitialized = () => void server.sendLoggingMessage({ level: 'error', logger: 'agent-engine', data: reason }).catch(() => undefined);
    return server;
  };
  await serveUntilStdinEnds(factory);
}

/** Serves both eras on stdin and stdout (serveStdio pins the era at the client's first message). */
async function serveUntilStdinEnds(factory: McpServerFactory, logger?: Logger, onReady?: () => void): Promise<void> {
  const ended = new Promise<void>((resolve) => process.stdin.once('end', resolve));
  const handle = serveStdio(factory, { onerror: (err) => logger?.debug({ err }, 'MCP stdio message refused') });
  onReady?.();
  // The client quitting (closing stdin) ends this process.
  await ended;
  await handle.close();
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
