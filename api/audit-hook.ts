import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Role } from '../core/tenancy';
import { recordAct, type AuditDeps } from '../use-cases/tenants/audit';
import { routeRole } from './auth';

/*
 * The audit log's one writer (docs/security.md, Audit log). After a successful (2xx) request that
 * changes something and whose route needs manage, decide or operate (not run: a run says who
 * started it, and a run start stays one write whoever makes it), it
 * records who (tenant, principal), what (the method and the route's pattern), the object's id, the
 * client's address and when. Never a body: a request may carry headers to store, a response the
 * key just issued. The row is written in onSend, awaited, so it exists before the client reads the
 * 2xx; reads (GET, HEAD) return at the first check, without a query. A failed write is logged and
 * the response goes out as it is: the act is done and cannot be undone.
 */

const AUDITED_ROLES: ReadonlySet<Role> = new Set(['manage', 'decide', 'operate']);
const READS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether the request is an act the log records (its status aside). */
function audited(request: FastifyRequest): boolean {
  if (READS.has(request.method) || !request.routeOptions.url || !request.caller) return false;
  return AUDITED_ROLES.has(routeRole(request));
}

/** The ids of the objects the responses created, taken before they are serialized (never the rest of the body). */
const createdIds = new WeakMap<FastifyRequest, string>();

/**
 * The object acted on: the route's `:id` (with the other parameters: a run and its tool call or
 * input), else the id of the object the response created, else the route's other parameters.
 */
function targetOf(request: FastifyRequest): string | null {
  const { id, ...rest } = (request.params ?? {}) as Record<string, unknown>;
  const others = Object.values(rest).map(String);
  if (id !== undefined) return [String(id), ...others].join('/');
  return createdIds.get(request) ?? (others.length > 0 ? others.join('/') : null);
}

/** Adds the audit hooks to `v1` (api/app.ts: once, for /v1). */
export function auditActs(v1: FastifyInstance, { db }: AuditDeps): void {
  v1.addHook('preSerialization', async (request, _reply, payload: unknown) => {
    if (audited(request) && typeof payload === 'object' && payload !== null && 'id' in payload && typeof payload.id === 'string') {
      createdIds.set(request, payload.id);
    }
    return payload;
  });
  v1.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode < 200 || reply.statusCode >= 300 || !audited(request)) return payload;
    const action = `${request.method} ${request.routeOptions.url}`;
    try {
      await recordAct(db, request.caller, { action, target: targetOf(request), address: request.ip ?? null });
    } catch (err) {
      request.log.error({ err, action }, 'the audit log did not record an act; the act itself succeeded');
    }
    return payload;
  });
}
