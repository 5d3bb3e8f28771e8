import { randomUUID } from 'node:crypto';
import { isInitializeRequest } from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { requireApiKey } from '../auth';
import type { AgentCallDeps } from '../../mcp-server/agent-call';
import { createAgentMcpServer } from '../../mcp-server/agent-server';
import { dbCallRegistry } from '../../mcp-server/call-registry';
import { closingSignal } from '../closing-signal';

export interface McpHttpDeps extends AgentCallDeps {
  /** when set, /mcp requires `Authorization: Bearer <apiKey>` (or the admin key) like /v1 */
  apiKey?: string;
  adminApiKey?: string;
}

const jsonRpcError = (reply: FastifyReply, status: number, message: string, code = -32000) =>
  reply.code(status).type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });

/**
 * POST /mcp: the agents as an MCP server over Streamable HTTP, stateless, so any API process can
 * answer any request. Each request gets its own Server and transport. The initialize answer carries
 * an Mcp-Session-Id that nothing stores: it only names the client, so that a cancel notification
 * (a POST of its own, perhaps to another process) can be paired with the call through mcp_calls.
 */
export const mcpHttpRoutes: FastifyPluginAsync<McpHttpDeps> = async (app, deps) => {
  // Host and Origin are checked for every route by host-check.ts.
  if (deps.apiKey) app.addHook('onRequest', requireApiKey(deps.apiKey, deps.adminApiKey));
  // Calls in flight would otherwise hold a shutdown until their runs end; their runs go on regardless.
  const closing = closingSignal(app);
  const open = new Set<NodeStreamableHTTPServerTransport>();
  app.addHook('preClose', async () => {
    await Promise.all([...open].map((t) => t.close()));
  });

  /** The SDK answers the request itself (JSON or an SSE stream), with a Server and transport of its own. */
  const answerMcpRequest = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body;
    const initializing = Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
    const header = request.headers['mcp-session-id'];
    const sessionId = typeof header === 'string' && /^[\x21-\x7e]{1,128}$/.test(header) ? header : undefined;
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: initializing ? () => `mcps_${randomUUID().replace(/-/g, '')}` : undefined,
    });
    const server = createAgentMcpServer(deps, { registry: sessionId ? dbCallRegistry(deps.db, sessionId) : undefined, stop: closing });
    open.add(transport);
    transport.onerror = (err) => request.log.debug({ err }, 'MCP transport error');
    // The SDK writes the response itself; Fastify must not touch it.
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
  };

  app.post('/mcp', { schema: { hide: true } }, async (request, reply) => {
    // JSON-RPC 2.0: "an empty Array" is an Invalid Request; the SDK would answer it 202 as if all were notifications.
    if (Array.isArray(request.body) && request.body.length === 0) return jsonRpcError(reply, 400, 'Invalid Request: an empty batch', -32600);
    await answerMcpRequest(request, reply);
  });

  // Stateless: no standalone SSE stream to open and no session to end (the spec allows 405 for both).
  app.get('/mcp', { schema: { hide: true } }, async (_request, reply) => jsonRpcError(reply.header('allow', 'POST'), 405, 'Method not allowed: this server is stateless; POST requests only'));
  app.delete('/mcp', { schema: { hide: true } }, async (_request, reply) => jsonRpcError(reply.header('allow', 'POST'), 405, 'Method not allowed: this server keeps no sessions'));
};
