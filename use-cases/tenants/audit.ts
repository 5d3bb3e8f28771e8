import { EngineError } from '../../core/engine-error';
import { insertAuditEvent, listAuditEvents, type AuditEvent } from '../../store/audit';
import type { Db } from '../../store/pool';
import { requireRole, type Caller } from '../caller';
import { tenantFor } from './tenants';

/*
 * The audit log (docs/security.md): the API records each act of manage, decide or operate, and
 * each write of the operator (api/audit-hook.ts); a tenant's `manage` reads its tenant's events,
 * the operator every tenant's.
 */

/** what the audit log's reader and writer need (api/routes/audit.ts, api/audit-hook.ts) */
export interface AuditDeps {
  db: Db;
}

export interface Act {
  /** the method and the route's pattern, e.g. `DELETE /v1/keys/:id` */
  action: string;
  /** the object's id, null when the act names none */
  target: string | null;
  /** the client's address */
  address: string | null;
}

/** Records the caller's act in the tenant they acted in. Never give it a secret: it is read back as is. */
export async function recordAct(db: Db, caller: Caller, act: Act): Promise<void> {
  await insertAuditEvent(db, {
    tenantId: caller.tenantId, principalId: caller.principal.id, principalName: caller.principal.name, ...act,
  });
}

export interface AuditListRequest {
  /** a tenant's id or name; absent: the caller's tenant, or every tenant for the operator */
  tenantId?: string;
  /** the nextCursor of a previous page (an event's id), or an ISO 8601 time: only later events */
  after?: string;
  limit: number;
}

export interface AuditPage {
  events: AuditEvent[];
  /** the id to pass as `after` for the next page; null when this page reached the end */
  nextCursor: string | null;
}

/** The largest bigserial; a cursor past it names no event. */
const MAX_ID = 2n ** 63n - 1n;

/** `after` as an event's id or as a time. */
function parseAfter(after: string | undefined): { afterId?: string; afterTime?: string } {
  if (after === undefined) return {};
  if (/^\d{1,19}$/.test(after) && BigInt(after) <= MAX_ID) return { afterId: after };
  const time = Date.parse(after);
  // a year PostgreSQL knows (it has no year 0) and ISO 8601 writes with four digits
  const year = new Date(time).getUTCFullYear();
  if (!/^\d{4}-\d{2}-\d{2}/.test(after) || Number.isNaN(time) || year < 1 || year > 9999) {
    throw new EngineError('validation', 'after: an event id (a nextCursor) or an ISO 8601 time', { field: 'after' });
  }
  return { afterTime: new Date(time).toISOString() };
}

/** Events oldest first: the operator's of every tenant or one, anyone else's of their own tenant. */
export async function listAudit(db: Db, caller: Caller, req: AuditListRequest): Promise<AuditPage> {
  requireRole(caller, 'manage');
  const tenantId = req.tenantId !== undefined
    ? (await tenantFor(db, caller, req.tenantId)).id
    : caller.isOperator ? undefined : caller.tenantId;
  const rows = await listAuditEvents(db, { tenantId, ...parseAfter(req.after), limit: req.limit + 1 });
  const events = rows.slice(0, req.limit);
  return { events, nextCursor: rows.length > req.limit ? events[events.length - 1].id : null };
}
