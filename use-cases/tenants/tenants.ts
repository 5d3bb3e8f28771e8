import { EngineError } from '../../core/engine-error';
import { DEFAULT_TENANT_NAME, TENANT_NAME_PATTERN, type Tenant } from '../../core/tenancy';
import type { Db } from '../../store/pool';
import { findTenant, insertTenant, listTenants } from '../../store/tenants';
import { requireRole, type Caller } from '../caller';

/*
 * Tenants (docs/security.md): only the operator makes or lists them. A tenant of another caller
 * answers as an unknown one, so a tenant's existence does not leak.
 */

/** What the tenant and key use cases need. */
export interface TenantDeps {
  db: Db;
}

export const tenantNotFound = (ref: string) => new EngineError('not_found', `Tenant ${ref} does not exist`);

export async function createTenant(db: Db, caller: Caller, name: string): Promise<Tenant> {
  requireRole(caller, 'operate');
  if (!TENANT_NAME_PATTERN.test(name)) {
    const rule = 'name: 1–63 lower-case letters, digits, - and _, starting with a letter or digit';
    throw new EngineError('validation', rule, { field: 'name' });
  }
  const tenant = await insertTenant(db, name);
  if (!tenant) throw new EngineError('conflict', `A tenant named ${name} exists`);
  return tenant;
}

/** Every tenant to the operator; a tenant's own otherwise. */
export async function listTenantsFor(db: Db, caller: Caller): Promise<Tenant[]> {
  if (caller.isOperator) return listTenants(db);
  const own = await findTenant(db, caller.tenantId);
  return own ? [own] : [];
}

/** A tenant by id or name, as the caller may see it: the operator any, anyone else their own. */
export async function tenantFor(db: Db, caller: Caller, ref: string): Promise<Tenant> {
  const tenant = await findTenant(db, ref);
  if (!tenant || (!caller.isOperator && tenant.id !== caller.tenantId)) throw tenantNotFound(ref);
  return tenant;
}

export { DEFAULT_TENANT_NAME };
