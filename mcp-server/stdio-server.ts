import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { Server, ProtocolErrorCode, type McpServerFactory } from '@modelcontextprotocol/server';
import type { Logger } from '../platform/logger';
import { mcpRequestError } from '../core/mcp-error-text';
import { agentListVersion } from '../use-cases/agents/exposed-agents';
import { memoryCallRegistry } from '../use-cases/runs/call-registry';
import { createAgentMcpServer, SERVER_INFO } from './agent-server';
import type { Caller } from '../use-cases/caller';
import { callerScope } from './method-roles';
import { approvalQuestions } from './approval-input';
import type { AgentCallDeps } from './call-context';
import { extTasks } from '../platform/ext-tasks';

// Agents change in other processes (file sync, the API); a desktop client learns of it from list_changed.
const LIST_POLL_MS = 2_000;

export interface StdioServeOptions {
  /** signs the requestState of approval questions to a 2026-era client */
  requestStateKey: Buffer;
  /** MCP_AGENT_TASKS */
  agentTasks: boolean;
  /** where the engine was found, for the log */
  source: string;
  /** whom it serves (cli/mcp-engine.ts: the operator, or AGENT_ENGINE_KEY's tenant and roles) */
  caller: Caller;
}

/**
 * `agent-engine mcp`: the agents as an MCP server over stdio, for desktop clients that launch it.
 * It starts runs through Temporal like the API and runs no worker. stdout carries the protocol
 * and nothing else: logs go to stderr. Resolves when the client closes stdin; the caller owns `deps`.
 */
export async function serveAgentsOverStdio(deps: AgentCallDeps, options: StdioServeOptions): Promise<void> {
  // The instances serving the connection (serveStdio may build one for a discovery probe first).
  const servers = new Set<Server>();
  const factory = await connectionServers(deps, options, servers);
  const poll = await pollAgentList(deps, options.caller.tenantId, servers);
  const ready = () => deps.logger.info({ taskQueue: deps.taskQueue, source: options.source }, 'MCP stdio server ready');
  await serveUntilStdinEnds(factory, deps.logger, ready);
  clearInterval(poll);
}

/** What builds the servers of the one connection, each added to `servers` while it is open. */
async function connectionServers(deps: AgentCallDeps, options: StdioServeOptions, servers: Set<Server>): Promise<McpServerFactory> {
  // One connection per process: request ids are unique for its lifetime.
  const registry = memoryCallRegistry();
  const approvals = approvalQuestions(deps, options.requestStateKey, callerScope(options.caller, 'stdio'), options.caller);
  // The person at this stdio client is local: their tasks are the local scope's.
  const ext = options.agentTasks ? await extTasks() : undefined;
  return ({ era }) => {
    // 2025: list_changed is sent as it comes, and approvals are asked with elicitation/create;
    // 2026: list_changed reaches the client's subscriptions/listen, approvals come as input_required.
    // Closed with the connection: its calls stop following their runs (which go on), its tasks' notices stop.
    const closed = new AbortController();
    const server = createAgentMcpServer(deps, {
      era, caller: options.caller, registry, listChanged: true, askApprovals: era === 'legacy',
      approvals: era === 'modern' ? approvals : undefined,
      stop: closed.signal,
      tasks: ext && { ext, scope: callerScope(options.caller, 'local'), notifyUntil: closed.signal },
    });
    servers.add(server);
    server.onclose = () => {
      servers.delete(server);
      closed.abort();
    };
    return server;
  };
}

/** Tells the servers' clients whenever the agent list changes; the interval to clear when the connection ends. */
async function pollAgentList(deps: AgentCallDeps, tenantId: string, servers: Set<Server>): Promise<NodeJS.Timeout> {
  // The tenant whose agents the servers offer (createAgentMcpServer's default): `default`.
  let version = await agentListVersion(deps.db, tenantId);
  return setInterval(() => {
    agentListVersion(deps.db, tenantId).then(async (next) => {
      if (next === version) return;
      version = next;
      for (const server of servers) {
        await server.sendToolListChanged();
        await server.sendPromptListChanged();
      }
    }).catch((err: unknown) => deps.logger.warn({ err }, 'checking the agent list failed'));
  }, LIST_POLL_MS);
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
    const logReason = () => server.sendLoggingMessage({ level: 'error', logger: 'agent-engine', data: reason });
    server.oninitialized = () => void logReason().catch(() => undefined);
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
