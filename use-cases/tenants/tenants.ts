import { EngineError } from '../../core/engine-error';
import { DEFAULT_TENANT_NAME, TENANT_NAME_PATTERN, type Tenant, type TenantLimits } from '../../core/tenancy';
import type { Db } from '../../store/pool';
import { findTenant, insertTenant, listTenants, updateTenantLimits } from '../../store/tenants';
import { requireRole, type Caller } from '../caller';
import { tenantLimitCache } from './run-cap';

/*
 * Tenants (docs/security.md): only the operator makes or lists them. A tenant of another caller
 * answers as an unknown one, so a tenant's existence does not leak.
 */

/** What the tenant and key use cases need. */
export interface TenantDeps {
  db: Db;
  /**
   * Called once a tenant is created, before the answer: the operator's files that serve every
   * tenant define their objects in it (api/server.ts). Logs its own failures.
   */
  onTenantCreated?: (tenant: Tenant) => Promise<void>;
}

export const tenantNotFound = (ref: string) => new EngineError('not_found', `Tenant ${ref} does not exist`);

export async function createTenant(
  deps: TenantDeps, caller: Caller, name: string, limits: Partial<TenantLimits> = {},
): Promise<Tenant> {
  requireRole(caller, 'operate');
  if (!TENANT_NAME_PATTERN.test(name)) {
    const rule = 'name: 1–63 lower-case letters, digits, - and _, starting with a letter or digit';
    throw new EngineError('validation', rule, { field: 'name' });
  }
  const tenant = await insertTenant(deps.db, name, limits);
  if (!tenant) throw new EngineError('conflict', `A tenant named ${name} exists`);
  await deps.onTenantCreated?.(tenant);
  return tenant;
}

/**
 * Sets or lifts (null) a tenant's caps (the operator): at once in this process, within 5 s in the
 * others (use-cases/tenants/run-cap.ts); runs already running are not stopped by a lower cap.
 */
export async function changeTenantLimits(db: Db, caller: Caller, ref: string, limits: Partial<TenantLimits>): Promise<Tenant> {
  requireRole(caller, 'operate');
  const found = await findTenant(db, ref);
  const tenant = found && await updateTenantLimits(db, found.id, limits);
  if (!tenant) throw tenantNotFound(ref);
  tenantLimitCache(db).forget(tenant.id);
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
