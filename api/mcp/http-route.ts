import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { requireApiKey } from '../auth';
import type { AgentCallDeps } from './agent-call';
import { createAgentMcpServer } from './agent-server';
import { dbCallRegistry } from './call-registry';

export interface McpHttpDeps extends AgentCallDeps {
  /** when set, /mcp requires `Authorization: Bearer <apiKey>` like /v1 */
  apiKey?: string;
}

const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const isLoopbackAddress = (address: string | undefined) => !!address && (/^(::ffff:)?127\./.test(address) || address === '::1');
const hostnameOf = (value: string) => {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname;
  } catch {
    return undefined;
  }
};

/**
 * A server listening on loopback is reachable from the user's browser: a page on evil.example.com
 * whose name resolves to 127.0.0.1 could call agents. On a loopback socket, Host and Origin must
 * name a loopback host (the MCP spec's DNS-rebinding advice); other deployments sit behind the API key.
 */
async function rejectDnsRebinding(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (!isLoopbackAddress(request.socket.localAddress)) return;
  const host = request.headers.host;
  const origin = request.headers.origin;
  const foreign = (value: string) => !LOOPBACK_HOSTNAMES.has(hostnameOf(value) ?? '');
  if ((host !== undefined && foreign(host)) || (origin !== undefined && foreign(origin))) {
    await jsonRpcError(reply, 403, 'Forbidden: a loopback server answers only requests whose Host and Origin name a loopback host');
  }
}

const jsonRpcError = (reply: FastifyReply, status: number, message: string) =>
  reply.code(status).type('application/json')
    .send({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });

/**
 * POST /mcp: the agents as an MCP server over Streamable HTTP, stateless, so any API process can
 * answer any request. Each request gets its own Server and transport. The initialize answer carries
 * an Mcp-Session-Id that nothing stores: it only names the client, so that a cancel notification
 * (a POST of its own, perhaps to another process) can be paired with the call through mcp_calls.
 */
export const mcpHttpRoutes: FastifyPluginAsync<McpHttpDeps> = async (app, deps) => {
  app.addHook('onRequest', rejectDnsRebinding);
  if (deps.apiKey) app.addHook('onRequest', requireApiKey(deps.apiKey));
  // Calls in flight would otherwise hold a shutdown until their runs end; their runs go on regardless.
  const closing = new AbortController();
  const open = new Set<StreamableHTTPServerTransport>();
  app.addHook('preClose', async () => {
    closing.abort();
    await Promise.all([...open].map((t) => t.close()));
  });

  app.post('/mcp', { schema: { hide: true } }, async (request, reply) => {
    const body = request.body;
    const initializing = Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
    const header = request.headers['mcp-session-id'];
    const sessionId = typeof header === 'string' && /^[\x21-\x7e]{1,128}$/.test(header) ? header : undefined;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: initializing ? () => `mcps_${randomUUID().replace(/-/g, '')}` : undefined,
    });
    const server = createAgentMcpServer(deps, { registry: sessionId ? dbCallRegistry(deps.db, sessionId) : undefined, stop: closing.signal });
    open.add(transport);
    transport.onerror = (err) => request.log.debug({ err }, 'MCP transport error');
    // The SDK writes the response itself (JSON or an SSE stream); Fastify must not touch it.
    reply.hijack();
    reply.raw.on('close', () => {
      open.delete(transport);
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, body);
    } catch (err) {
      request.log.error({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }));
      }
    }
  });

  // Stateless: no standalone SSE stream to open and no session to end (the spec allows 405 for both).
  app.get('/mcp', { schema: { hide: true } }, async (_request, reply) => jsonRpcError(reply.header('allow', 'POST'), 405, 'Method not allowed: this server is stateless; POST requests only'));
  app.delete('/mcp', { schema: { hide: true } }, async (_request, reply) => jsonRpcError(reply.header('allow', 'POST'), 405, 'Method not allowed: this server keeps no sessions'));
};
