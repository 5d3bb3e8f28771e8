import { randomUUID } from 'node:crypto';
import {
  DEFAULT_REQUEST_TIMEOUT_MSEC, isCallToolResult, isJSONRPCErrorResponse, isJSONRPCResultResponse,
} from '@modelcontextprotocol/client';
import type { Client, ClientCapabilities, Implementation, JSONRPCMessage, Tool } from '@modelcontextprotocol/client';
import type {
  ConnectedMcpSessionPort, DispatchOptions, JsonRpcResponse, RawClientDispatch, TaskEnabledSession, ToolDeclarationProvider,
} from '@modelcontextprotocol/ext-tasks/client' with { 'resolution-mode': 'import' };
import { extTasks, type ExtTasks } from '../../platform/ext-tasks';

/** Who this engine is to a server, as mcp-client/connections/connect.ts declares it; a 2026-era request carries it itself. */
const CLIENT_INFO: Implementation = { name: 'durable-agent-engine', version: '0.1.0' };

export interface TaskEndpoint {
  /**
   * Whose tasks these are: a reference names it and is polled only under the same one. It must stay
   * the same across connections and worker processes, so it comes from the integration (its id).
   */
  endpointId: string;
  /** what the connection declared (2026 era: each task request carries them; the SDK Client does not tell them) */
  clientInfo?: Implementation;
  clientCapabilities?: ClientCapabilities;
}

/**
 * The server answered a task request with questions instead of a task (2026 era: `input_required`
 * before any task exists). The task path does not answer them: the caller makes the call the usual
 * way, whose questions wait durably. Nothing was started, so nothing is sent twice.
 */
export class AsksBeforeTask extends Error {
  override name = 'AsksBeforeTask';
  constructor() {
    super('the MCP server asks for input before it starts a task');
  }
}

export interface TaskSession {
  session: TaskEnabledSession;
  generation: 'none' | 'v1' | 'v2';
  /** the plain result a 2025-era server answered a task-augmented call with, if it did */
  plainAnswer(): unknown;
}

/** ext-tasks adapts a Client for one session at a time: the operations of one client take turns. */
const turns = new WeakMap<Client, Promise<unknown>>();

function inTurn<T>(client: Client, run: () => Promise<T>): Promise<T> {
  const mine = (turns.get(client) ?? Promise.resolve()).then(run, run);
  turns.set(client, mine.catch(() => undefined));
  return mine;
}

/**
 * A task session over `client` for the length of `use`. `tool` is the declaration a call is judged
 * by (2025 era: whether to ask for a task). The session is not left to list the tools itself: the
 * caller has them, from the SDK Client, which pages and caches them.
 */
export function withTaskSession<T>(
  client: Client, endpoint: TaskEndpoint, tool: Tool | undefined, use: (s: TaskSession) => Promise<T>,
): Promise<T> {
  return inTurn(client, async () => {
    const ext = await extTasks();
    const modern = client.getProtocolEra() === 'modern';
    // ext-tasks is typed against the SDK's ES-module build, this engine runs its CommonJS one: the
    // adapter uses the Client's public methods only, and the SDK's errors are recognised across builds.
    const esmClient = client as unknown as Parameters<ExtTasks['client']['createSessionPortFromClient']>[0];
    const port = ext.client.createSessionPortFromClient(esmClient, endpoint.endpointId, modern ? {
      rawDispatch: rawDispatchFor(client),
      v2RequestFraming: {
        protocolVersion: client.getNegotiatedProtocolVersion() ?? '',
        clientInfo: { ...(endpoint.clientInfo ?? CLIENT_INFO) },
        clientCapabilities: JSON.parse(JSON.stringify(endpoint.clientCapabilities ?? {})),
      },
    } : {});
    const remembering = rememberPlainAnswers(port);
    let session: TaskEnabledSession | undefined;
    try {
      session = ext.client.withTasks(remembering.port, {
        tools: declarations(ext, tool),
        onInputRequest: () => { throw new AsksBeforeTask(); },
      });
      return await use({ session, generation: port.taskCapabilities.generation, plainAnswer: remembering.plain });
    } finally {
      await session?.close();
      port[Symbol.dispose]();
    }
  });
}

function declarations(ext: ExtTasks, tool: Tool | undefined): ToolDeclarationProvider {
  let declaration: ReturnType<ExtTasks['client']['toolDeclarationFromMcpTool']> | undefined;
  try {
    declaration = tool === undefined ? undefined : ext.client.toolDeclarationFromMcpTool(tool);
  } catch {
    // A tool ext-tasks cannot read (its inputSchema not an object) is called without a task.
  }
  return { currentTool: (name) => (name === declaration?.name ? declaration : undefined) };
}

const isRecord = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

/**
 * A 2025-era server may answer a task-augmented tools/call with a plain result; ext-tasks, expecting
 * a task there, refuses it as undecodable. The port keeps that answer so the caller can use it.
 */
function rememberPlainAnswers(port: ConnectedMcpSessionPort): { port: ConnectedMcpSessionPort; plain: () => unknown } {
  let plain: unknown;
  const wrapped: ConnectedMcpSessionPort = {
    get endpointId() { return port.endpointId; },
    get taskCapabilities() { return port.taskCapabilities; },
    get invalidated() { return port.invalidated; },
    onServerRequest: (handler) => port.onServerRequest(handler),
    onNotification: (listener) => port.onNotification(listener),
    onInvalidated: (listener) => port.onInvalidated(listener),
    async dispatch(request, options) {
      const response = await port.dispatch(request, options);
      const augmented = isRecord(request) && request.method === 'tools/call' && isRecord(request.params) && isRecord(request.params.task);
      const plainResult = response.kind === 'result' && isCallToolResult(response.result) && !('task' in response.result);
      if (augmented && plainResult) plain = response.result;
      return response;
    },
  };
  return { port: wrapped, plain: () => plain };
}

const dispatchers = new WeakMap<Client, RawClientDispatch>();

/**
 * The request path for 2026-era task traffic. The SDK Client refuses a `resultType: "task"` answer
 * ("Unsupported result type"), and ext-tasks asks the host for a raw path then: this one sends the
 * JSON-RPC request ext-tasks framed over the client's own transport and takes the answer before the
 * Client sees it. Installed once per client; every other message passes through untouched.
 */
function rawDispatchFor(client: Client): RawClientDispatch {
  const known = dispatchers.get(client);
  if (known) return known;
  const transport = client.transport;
  if (!transport) throw new Error('the MCP client is not connected');
  const waiting = new Map<string, (message: JSONRPCMessage) => void>();
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const id = 'id' in message && !('method' in message) ? message.id : undefined;
    const answer = typeof id === 'string' ? waiting.get(id) : undefined;
    if (answer) answer(message);
    else deliver?.call(transport, message, extra);
  };
  const dispatch = async (request: unknown, options: DispatchOptions = {}): Promise<JsonRpcResponse> => {
    if (!isRecord(request) || typeof request.method !== 'string') throw new Error('not a JSON-RPC request');
    const id = `ext-tasks-${randomUUID()}`;
    const { signal, context } = options;
    const timeoutMs = context?.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MSEC;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const answered = new Promise<JSONRPCMessage>((resolve, reject) => {
      waiting.set(id, resolve);
      timer = setTimeout(() => reject(new Error(`the MCP server did not answer ${request.method} within ${timeoutMs} ms`)), timeoutMs);
      onAbort = () => reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    // Marked handled now: it may reject (timeout, abort) while the request is still being sent; the
    // await below still sees that.
    answered.catch(() => undefined);
    try {
      signal?.throwIfAborted();
      const params = isRecord(request.params) ? { params: request.params } : {};
      const message = { jsonrpc: '2.0', id, method: request.method, ...params } as JSONRPCMessage;
      const headers = context?.headers ? { headers: context.headers } : {};
      await transport.send(message, { ...headers, ...(signal ? { requestSignal: signal } : {}) });
      return dispatchResponse(await answered, request.method);
    } finally {
      waiting.delete(id);
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  };
  dispatchers.set(client, dispatch);
  return dispatch;
}

/** A server's answer as ext-tasks takes it. */
function dispatchResponse(answer: JSONRPCMessage, method: string): JsonRpcResponse {
  if (isJSONRPCErrorResponse(answer)) return { kind: 'error', error: { code: answer.error.code, message: String(answer.error.message) } };
  // Plain JSON (no undefined members), which is all ext-tasks accepts as a result.
  if (isJSONRPCResultResponse(answer)) return { kind: 'result', result: JSON.parse(JSON.stringify(answer.result)) };
  throw new Error(`the MCP server answered ${method} with something that is not a JSON-RPC response`);
}
