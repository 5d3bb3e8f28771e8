import { DEFAULT_TENANT_ID, DEFAULT_TENANT_NAME, TENANT_NAME_PATTERN } from './tenancy';

/**
 * The tenants an object of the operator's files serves (an agent file's `tenants`, an
 * INTEGRATIONS_FILE entry's): a list of tenant names, or `"*"` for every tenant, those created
 * later too. A file that says nothing serves `default`. A listed tenant that does not exist yet is
 * not an error: the object appears in it once the operator creates it.
 */
export type FileTenants = '*' | readonly string[];

export const ALL_TENANTS = '*';
export const DEFAULT_FILE_TENANTS: FileTenants = [DEFAULT_TENANT_NAME];
export const MAX_FILE_TENANTS = 1000;

/** What is wrong with a `tenants` value as a file gives it; undefined when it is a `FileTenants`. */
export function fileTenantsProblem(value: unknown): string | undefined {
  const all = `"${ALL_TENANTS}" for every tenant`;
  if (value === ALL_TENANTS) return undefined;
  if (!Array.isArray(value)) return `must be a list of tenant names or ${all}, found ${JSON.stringify(value)?.slice(0, 80)}`;
  if (value.length === 0) return `lists no tenant; omit it for "${DEFAULT_TENANT_NAME}", or give ${all}`;
  if (value.length > MAX_FILE_TENANTS) return `lists ${value.length} tenants; at most ${MAX_FILE_TENANTS}, or give ${all}`;
  const bad = value.filter((name) => typeof name !== 'string' || !TENANT_NAME_PATTERN.test(name));
  if (bad.length > 0) {
    const shown = bad.slice(0, 5).map((name) => JSON.stringify(name)?.slice(0, 70)).join(', ') + (bad.length > 5 ? ', …' : '');
    return `${shown}: not a tenant name (1–63 lower-case letters, digits, - and _, starting with a letter or digit)`;
  }
  if (new Set(value).size !== value.length) return 'names a tenant twice';
  return undefined;
}

/** The served tenants, as ids, out of the tenants there are (name → id); names that do not exist yet aside. */
export function servedTenants(
  tenants: FileTenants, existing: ReadonlyMap<string, string>,
): { ids: string[]; missing: string[] } {
  if (tenants === ALL_TENANTS) return { ids: [...existing.values()], missing: [] };
  return {
    ids: tenants.flatMap((name) => existing.get(name) ?? []),
    missing: tenants.filter((name) => !existing.has(name)),
  };
}

/** How a report names an object in a tenant: its name alone in `default`, `tenant/name` elsewhere. */
export const nameInTenant = (name: string, tenant: { id: string; name: string }): string =>
  tenant.id === DEFAULT_TENANT_ID ? name : `${tenant.name}/${name}`;
