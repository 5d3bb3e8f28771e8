import { createMcpHandler, isLegacyRequest, type AuthInfo } from '@modelcontextprotocol/server';
import { toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { approvalKeyKind, authenticate } from '../auth';
import type { Principals } from '../principals';
import { createAgentMcpServer } from '../../mcp-server/agent-server';
import { approvalQuestions } from '../../mcp-server/approval-input';
import type { AgentCallDeps } from '../../mcp-server/call-context';
import type { TaskScope } from '../../use-cases/runs/agent-tasks';
import type { Caller } from '../../use-cases/caller';
import { callerScope } from '../../mcp-server/method-roles';
import { dbCallRegistry } from '../../use-cases/runs/call-registry';
import { closingSignal } from '../closing-signal';
import { legacyMcpLeg } from './mcp-legacy';
import { extTasks } from '../../platform/ext-tasks';

export interface McpHttpDeps extends AgentCallDeps {
  /** who sends each request, as for /v1 (api/principals.ts) */
  principals: Principals;
  /** signs the requestState of approval questions to 2026-era clients; absent, they are not asked */
  requestStateKey?: Buffer;
  /** MCP_AGENT_TASKS: run agents as MCP tasks when a client asks (default true) */
  agentTasks?: boolean;
}

const jsonRpcError = (reply: FastifyReply, status: number, message: string, code = -32000, id: unknown = null) =>
  reply.code(status).type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message }, id });

const LISTEN_REFUSED = 'subscriptions/listen is not offered: list tools and prompts again to see changes';

const isListen = (body: unknown) => (body as { method?: unknown } | null)?.method === 'subscriptions/listen';

/**
 * POST /mcp: the agents as an MCP server over Streamable HTTP, both protocol eras, stateless, so
 * any API process can answer any request. A request is classified by the SDK (isLegacyRequest):
 * 2025-era traffic goes to the legacy leg (mcp-legacy.ts), 2026-era traffic to a strict
 * createMcpHandler. Both build their Server with createAgentMcpServer. Fastify has parsed (and
 * bounded) the body, which both legs take as it is.
 */
export const mcpHttpRoutes: FastifyPluginAsync<McpHttpDeps> = async (app, deps) => {
  // Host and Origin are checked for every route by host-check.ts.
  // The roles each MCP method needs are checked where the method is served.
  app.addHook('onRequest', authenticate(deps.principals, { checkRole: false }));
  // A task is seen only in its tenant, with the kind of key that started it; without keys (loopback only), by local callers.
  const scopeOf = (caller: Caller): TaskScope => {
    const kind = approvalKeyKind(caller);
    return callerScope(caller, kind === 'admin' || kind === 'api' ? kind : 'local');
  };
  const ext = deps.agentTasks === false ? undefined : await extTasks();
  // Calls in flight would otherwise hold a shutdown until their runs end; their runs go on regardless.
  const closing = closingSignal(app);
  // A cancel pairs with calls of the caller's tenant only (the session id is not a secret to rely on).
  const registryOf = (caller: Caller, sessionId: string) => dbCallRegistry(deps.db, callerScope(caller, sessionId).slice(0, 200));
  const legacy = legacyMcpLeg(registryOf, (registry, request) => createAgentMcpServer(deps, {
    era: 'legacy', caller: request.caller, registry, stop: closing, tasks: ext && { ext, scope: scopeOf(request.caller) },
  }));
  const modern = createMcpHandler(({ authInfo }) => {
    // Set below from the request: a request reaches this handler only through the authenticated route.
    const caller = authInfo!.extra!.caller as Caller;
    return createAgentMcpServer(deps, {
      era: 'modern', caller, stop: closing, streamCloseCancels: true, tasks: ext && { ext, scope: scopeOf(caller) },
      // The state is bound to the caller's tenant and kind of key.
      approvals: deps.requestStateKey
        ? approvalQuestions(deps, deps.requestStateKey, callerScope(caller, approvalKeyKind(caller)), caller) : undefined,
    });
  }, { legacy: 'reject', onerror: (err) => app.log.debug({ err }, 'MCP request refused or failed') });
  const serveModern = toNodeHandler(modern, { onerror: (err) => app.log.error({ err }, 'MCP request failed') });
  app.addHook('preClose', async () => {
    await Promise.all([legacy.close(), modern.close()]);
  });

  app.post('/mcp', { schema: { hide: true } }, async (request, reply) => {
    const body = request.body;
    // JSON-RPC 2.0: "an empty Array" is an Invalid Request; the SDK would answer it 202 as if all were notifications.
    if (Array.isArray(body) && body.length === 0) return jsonRpcError(reply, 400, 'Invalid Request: an empty batch', -32600);
    if (await isLegacyRequest(await toWebRequest(request.raw, body), body)) return legacy.serve(request, reply);
    // Change notifications would have to reach listeners on every API process; agents are read per request instead.
    if (isListen(body)) return jsonRpcError(reply, 200, LISTEN_REFUSED, -32601, (body as { id?: unknown }).id ?? null);
    reply.hijack();
    const authInfo: AuthInfo = { token: '', clientId: approvalKeyKind(request.caller), scopes: [], extra: { caller: request.caller } };
    await serveModern(Object.assign(request.raw, { auth: authInfo }), reply.raw, body);
  });

  // Stateless: no standalone SSE stream to open and no session to end (the spec allows 405 for both).
  const postOnly = (reply: FastifyReply, why: string) => jsonRpcError(reply.header('allow', 'POST'), 405, `Method not allowed: ${why}`);
  app.get('/mcp', { schema: { hide: true } }, async (_request, reply) => postOnly(reply, 'this server is stateless; POST requests only'));
  app.delete('/mcp', { schema: { hide: true } }, async (_request, reply) => postOnly(reply, 'this server keeps no sessions'));
};
