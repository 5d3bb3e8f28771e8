import { randomUUID } from 'node:crypto';
import { isInitializeRequest, type Server } from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CallRegistry } from '../../use-cases/runs/call-registry';

/**
 * The 2025 era of /mcp, stateless: each request gets its own Server (from the same builder as the
 * 2026 era) and transport, so any API process can answer any request. Not the SDK's own stateless
 * fallback (createMcpHandler's `legacy: 'stateless'`), because that one never names the client:
 * here the initialize answer carries an Mcp-Session-Id that nothing stores, so that a cancel
 * notification (a POST of its own, perhaps to another process) can be paired with its call
 * through mcp_calls.
 */
export function legacyMcpLeg(
  registryOf: (caller: FastifyRequest['caller'], sessionId: string) => CallRegistry,
  build: (registry: CallRegistry | undefined, request: FastifyRequest) => Server,
) {
  const open = new Set<NodeStreamableHTTPServerTransport>();

  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body;
    const initializing = Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
    const header = request.headers['mcp-session-id'];
    const sessionId = typeof header === 'string' && /^[\x21-\x7e]{1,128}$/.test(header) ? header : undefined;
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: initializing ? () => `mcps_${randomUUID().replace(/-/g, '')}` : undefined,
    });
    const server = build(sessionId ? registryOf(request.caller, sessionId) : undefined, request);
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

  return {
    serve,
    close: async () => {
      await Promise.all([...open].map((t) => t.close()));
    },
  };
}
