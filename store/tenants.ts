import { createHash, randomBytes } from 'node:crypto';
import type { Role, Tenant, TenantLimits } from '../core/tenancy';
import { newId } from '../platform/ids';
import { statementName, type Queryable } from './pool';

/*
 * Tenants and their API keys (migration 24). A key is 32 random bytes (256 bits), given to its
 * holder once as `ak_<base64url>`; the database keeps only its SHA-256.
 */

interface TenantRow { id: string; name: string; max_running_runs: number | null; tool_call_slots: number | null; created_at: Date }
const toTenant = (r: TenantRow): Tenant => ({
  id: r.id, name: r.name, limits: { maxRunningRuns: r.max_running_runs, toolCallSlots: r.tool_call_slots },
  createdAt: r.created_at.toISOString(),
});

/** The new tenant; undefined when the name is taken. */
export async function insertTenant(db: Queryable, name: string, limits: Partial<TenantLimits> = {}): Promise<Tenant | undefined> {
  const { rows } = await db.query<TenantRow>(
    `INSERT INTO tenants (id, name, max_running_runs, tool_call_slots) VALUES ($1, $2, $3, $4)
     ON CONFLICT (name) DO NOTHING RETURNING *`,
    [newId('ten'), name, limits.maxRunningRuns ?? null, limits.toolCallSlots ?? null],
  );
  return rows[0] && toTenant(rows[0]);
}

/** Sets the limits given (null lifts a cap, absent keeps it); undefined when there is no such tenant. */
export async function updateTenantLimits(db: Queryable, id: string, limits: Partial<TenantLimits>): Promise<Tenant | undefined> {
  const { rows } = await db.query<TenantRow>(
    `UPDATE tenants SET max_running_runs = CASE WHEN $2 THEN $3 ELSE max_running_runs END,
                        tool_call_slots = CASE WHEN $4 THEN $5 ELSE tool_call_slots END
     WHERE id = $1 RETURNING *`,
    [
      id, limits.maxRunningRuns !== undefined, limits.maxRunningRuns ?? null,
      limits.toolCallSlots !== undefined, limits.toolCallSlots ?? null,
    ],
  );
  return rows[0] && toTenant(rows[0]);
}

const TENANT_SQL = 'SELECT * FROM tenants WHERE id = $1 OR name = $1';

/** By id or name. */
export async function findTenant(db: Queryable, ref: string): Promise<Tenant | undefined> {
  const { rows } = await db.query<TenantRow>({ name: statementName(TENANT_SQL), text: TENANT_SQL, values: [ref] });
  return rows[0] && toTenant(rows[0]);
}

/** Names of tenants by id, per database. A tenant is never renamed nor deleted, so a name once read stays true. */
const namesByDb = new WeakMap<Queryable, Map<string, string>>();
/** Tenants are counted in tens or hundreds; past this many, the cache starts over. */
const MAX_CACHED_NAMES = 10_000;
const NAME_SQL = 'SELECT name FROM tenants WHERE id = $1';

/** The tenant's name (for metric labels, which never hold ids), read once per process; undefined for no such tenant. */
export async function tenantName(db: Queryable, id: string): Promise<string | undefined> {
  let names = namesByDb.get(db);
  if (!names) namesByDb.set(db, (names = new Map()));
  const known = names.get(id);
  if (known !== undefined) return known;
  const { rows } = await db.query<{ name: string }>({ name: statementName(NAME_SQL), text: NAME_SQL, values: [id] });
  if (!rows[0]) return undefined;
  if (names.size >= MAX_CACHED_NAMES) names.clear();
  names.set(id, rows[0].name);
  return rows[0].name;
}

export async function listTenants(db: Queryable): Promise<Tenant[]> {
  const { rows } = await db.query<TenantRow>('SELECT * FROM tenants ORDER BY created_at, id');
  return rows.map(toTenant);
}

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  roles: Role[];
  /** who issued it (a principal's id) */
  createdBy: string | null;
  expiresAt: string | null;
  createdAt: string;
}

interface KeyRow {
  id: string; tenant_id: string; name: string; roles: Role[]; created_by: string | null; expires_at: Date | null; created_at: Date;
}
const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id, tenantId: r.tenant_id, name: r.name, roles: r.roles, createdBy: r.created_by,
  expiresAt: r.expires_at?.toISOString() ?? null, createdAt: r.created_at.toISOString(),
});

const KEY_COLUMNS = 'id, tenant_id, name, roles, created_by, expires_at, created_at';

export const keyDigest = (secret: string): Buffer => createHash('sha256').update(secret).digest();

/** Issues a key: the record and the secret, which is stored only as its digest. */
export async function insertApiKey(
  db: Queryable, key: { tenantId: string; name: string; roles: Role[]; createdBy: string; expiresAt?: string },
): Promise<{ record: ApiKeyRecord; secret: string }> {
  const secret = `ak_${randomBytes(32).toString('base64url')}`;
  const { rows } = await db.query<KeyRow>(
    `INSERT INTO api_keys (id, tenant_id, name, roles, key_hash, created_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING ${KEY_COLUMNS}`,
    [newId('key'), key.tenantId, key.name, key.roles, keyDigest(secret), key.createdBy, key.expiresAt ?? null],
  );
  return { record: toKey(rows[0]), secret };
}

const VALID_KEY_SQL = `SELECT ${KEY_COLUMNS} FROM api_keys
  WHERE key_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;

/** The key with this secret, unless it is unknown, revoked or expired. */
export async function findValidKey(db: Queryable, secret: string): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<KeyRow>({ name: statementName(VALID_KEY_SQL), text: VALID_KEY_SQL, values: [keyDigest(secret)] });
  return rows[0] && toKey(rows[0]);
}

/** The keys not revoked, of one tenant or of all, oldest first. */
export async function listApiKeys(db: Queryable, tenantId: string | undefined): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<KeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE revoked_at IS NULL AND ($1::text IS NULL OR tenant_id = $1) ORDER BY created_at, id`,
    [tenantId ?? null],
  );
  return rows.map(toKey);
}

/** Revokes the key (of the tenant, when one is given); whether there was such a key not yet revoked. */
export async function revokeApiKey(db: Queryable, id: string, tenantId: string | undefined): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL AND ($2::text IS NULL OR tenant_id = $2)',
    [id, tenantId ?? null],
  );
  return rowCount === 1;
}
