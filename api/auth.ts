import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { ApprovalKeyKind } from '../core/approval';
import type { Role } from '../core/tenancy';
import { requireRole, type Caller } from '../use-cases/caller';
import type { Principals } from './principals';
import { HttpProblem } from './problem';

declare module 'fastify' {
  interface FastifyRequest {
    /** who sent the request (set by the authenticate hook of /v1 and /mcp) */
    caller: Caller;
  }
  interface FastifyContextConfig {
    /** the role a route needs; default `read` for GET and HEAD, `run` otherwise */
    role?: Role;
  }
}

/** The role a route needs: its own, else `read` to read and `run` to act. */
export function routeRole(request: FastifyRequest): Role {
  const role = request.routeOptions.config.role;
  if (role) return role;
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'run';
}

export const unauthorized = () =>
  new HttpProblem(401, 'A valid API key or token is required: send "Authorization: Bearer <key>"', 'unauthorized');

/**
 * An onRequest hook: finds who sends the request (api/principals.ts), refuses them (401) when
 * nobody, and refuses (403) a route their roles do not reach; `request.caller` is them.
 */
export function authenticate(principals: Principals, opts: { checkRole: boolean } = { checkRole: true }): onRequestAsyncHookHandler {
  return async (request, reply) => {
    const caller = await principals.callerOf(request);
    if (!caller) {
      reply.header('www-authenticate', principals.challenge);
      throw unauthorized();
    }
    request.caller = caller;
    if (opts.checkRole) requireRole(caller, routeRole(request));
  };
}

/** Which kind of credential decided an approval, as approvals record it beside who decided it. */
export function approvalKeyKind(caller: Caller): ApprovalKeyKind {
  if (caller.principal.id === 'operator') return caller.principal.name === 'local' ? 'none' : 'admin';
  return caller.principal.id === 'anonymous' ? 'none' : 'api';
}
