import { statementName, type Queryable } from './pool';

/*
 * The audit log (migration 27): who did what, to which object, when and from where. Rows are only
 * ever added; the id (bigserial) orders them and is the cursor of a listing.
 */

export interface AuditEntry {
  tenantId: string;
  principalId: string;
  principalName: string;
  /** the method and the route's pattern, e.g. `DELETE /v1/keys/:id` */
  action: string;
  /** the object's id (e.g. `key_…`), null when the act names none */
  target: string | null;
  /** the client's address */
  address: string | null;
}

export interface AuditEvent extends AuditEntry {
  /** the row's id as text (a bigint), the cursor of the next page */
  id: string;
  at: string;
}

const INSERT_SQL = `INSERT INTO audit_events (tenant_id, principal_id, principal_name, action, target, address)
  VALUES ($1, $2, $3, $4, $5, $6)`;

export async function insertAuditEvent(db: Queryable, entry: AuditEntry): Promise<void> {
  await db.query({
    name: statementName(INSERT_SQL), text: INSERT_SQL,
    values: [entry.tenantId, entry.principalId, entry.principalName, entry.action, entry.target, entry.address],
  });
}

export interface AuditQuery {
  /** one tenant's events; every tenant's when absent */
  tenantId?: string;
  /** only events of a greater id */
  afterId?: string;
  /** only events later than this time (ISO 8601) */
  afterTime?: string;
  limit: number;
}

interface AuditRow {
  id: string; tenant_id: string; principal_id: string; principal_name: string; action: string;
  target: string | null; address: string | null; at: Date;
}

const toEvent = (r: AuditRow): AuditEvent => ({
  id: r.id, tenantId: r.tenant_id, principalId: r.principal_id, principalName: r.principal_name,
  action: r.action, target: r.target, address: r.address, at: r.at.toISOString(),
});

const LIST_SQL = `SELECT id::text AS id, tenant_id, principal_id, principal_name, action, target, address, at FROM audit_events
  WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::bigint IS NULL OR id > $2) AND ($3::timestamptz IS NULL OR at > $3)
  ORDER BY id LIMIT $4`;

/** Events oldest first, filtered in SQL. */
export async function listAuditEvents(db: Queryable, query: AuditQuery): Promise<AuditEvent[]> {
  const { rows } = await db.query<AuditRow>(LIST_SQL, [
    query.tenantId ?? null, query.afterId ?? null, query.afterTime ?? null, query.limit,
  ]);
  return rows.map(toEvent);
}
