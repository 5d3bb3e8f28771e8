import { readFile } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { ConfigError } from '../../platform/config';
import { findIntegrationByName, insertIntegration, updateIntegration } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import { holdTransactionLock, inTransaction, type Db, type Queryable } from '../../store/pool';
import type { Logger } from '../../platform/logger';
import { readMcpConfig, type Environment, type ImportedServer } from './mcp-config-import';
import { IMPORTED_DURATION_FIELDS, IMPORTED_SETTINGS } from './integration-input';
import { EngineError } from '../../core/engine-error';
import { DEFAULT_FILE_TENANTS, fileTenantsProblem, nameInTenant, servedTenants, type FileTenants } from '../../core/file-tenants';
import { listTenants } from '../../store/tenants';
import type { NameReference } from '../../platform/operator-names';

const LOAD_LOCK_KEY = 0x696e_7466; // "intf": one load at a time across API processes

export interface IntegrationsFileReport {
  /** a name in `default`, `tenant/name` in another tenant */
  created: string[];
  updated: string[];
  unchanged: string[];
  /** servers that list tenants not created yet: they appear there once the operator creates them */
  waiting: string[];
  /** the servers' names, reserved in the tenants each serves (platform/operator-names.ts) */
  references: NameReference[];
}

/**
 * The operator's MCP servers (INTEGRATIONS_FILE, in the Claude Desktop or VS Code shape that
 * POST /v1/integrations/import reads), loaded when the API starts and when a tenant is created.
 * This is how stdio servers reach an API that listens off loopback without an ADMIN_API_KEY. Each
 * server is created, or its transport replaced, by name in every tenant it serves (its `tenants`,
 * default `default`); integrations the file does not name there are left alone. `${VAR}` is
 * expanded into env and headers values from the API's environment, as on import.
 */
export async function loadIntegrationsFile(
  opts: { db: Db; file: string; env: Environment; logger: Logger },
): Promise<IntegrationsFileReport> {
  const { servers, tenantsOf } = await readIntegrationsFile(opts.file, opts.env);
  const report: IntegrationsFileReport = { created: [], updated: [], unchanged: [], waiting: [], references: [] };
  await inTransaction(opts.db, async (tx) => {
    await holdTransactionLock(tx, LOAD_LOCK_KEY);
    const tenants = await listTenants(tx);
    const tenantIds = new Map(tenants.map((t) => [t.name, t.id]));
    for (const server of servers) {
      const wanted = tenantsOf.get(server.name) ?? DEFAULT_FILE_TENANTS;
      const { ids, missing } = servedTenants(wanted, tenantIds);
      report.references.push({ kind: 'integration', name: server.name, by: 'INTEGRATIONS_FILE', tenantIds: wanted === '*' ? '*' : ids });
      if (missing.length > 0) report.waiting.push(`${server.name}: tenant(s) ${missing.join(', ')} do not exist yet`);
      for (const tenant of tenants.filter((t) => ids.includes(t.id))) {
        report[await storeServer(tx, server, tenant.id)].push(nameInTenant(server.name, tenant));
      }
    }
  });
  const { created, updated, waiting } = report;
  opts.logger.info({ file: opts.file, created, updated, ...(waiting.length > 0 ? { waiting } : {}) }, 'integrations file loaded');
  return report;
}

/** Creates the server in the tenant, or updates the tenant's integration of that name, whoever made it. */
async function storeServer(tx: Queryable, server: ImportedServer, tenantId: string): Promise<'created' | 'updated' | 'unchanged'> {
  const existing = await findIntegrationByName(tx, server.name, tenantId);
  if (!existing) {
    await insertIntegration(tx, server, tenantId);
    return 'created';
  }
  if (!isDeepStrictEqual(existing.transport, server.transport) || settingsChanged(existing, server)
    || !isDeepStrictEqual(existing.approval, server.approval ?? null)) {
    const { name: _name, ...patch } = server;
    await updateIntegration(tx, existing.id, { ...patch, approval: server.approval ?? null });
    return 'updated';
  }
  return 'unchanged';
}

/** The file's servers, and the tenants of those that list theirs; a bad file is a ConfigError naming the problem. */
async function readIntegrationsFile(
  file: string, env: Environment,
): Promise<{ servers: ImportedServer[]; tenantsOf: Map<string, FileTenants> }> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`INTEGRATIONS_FILE ${file} cannot be read as JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new ConfigError(`INTEGRATIONS_FILE ${file} must hold a JSON object`);
  }
  const tenantsOf = takeTenants(file, doc as Record<string, unknown>);
  try {
    return { servers: readMcpConfig(doc as Record<string, unknown>, { env }), tenantsOf };
  } catch (err) {
    if (err instanceof EngineError) throw new ConfigError(`INTEGRATIONS_FILE ${file}: ${err.message.replace(/\bbody\./g, '')}`);
    throw err;
  }
}

/**
 * Takes `tenants` out of each server entry (the file's own field: POST /v1/integrations/import
 * refuses it), checked; every bad one is named in one ConfigError.
 */
function takeTenants(file: string, doc: Record<string, unknown>): Map<string, FileTenants> {
  const tenantsOf = new Map<string, FileTenants>();
  const problems: string[] = [];
  for (const key of ['mcpServers', 'servers']) {
    const servers = doc[key];
    if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) continue;
    const entries = Object.entries(servers as Record<string, unknown>);
    const copied = entries.map(([name, entry]) => {
      if (typeof entry !== 'object' || entry === null || !('tenants' in entry)) return [name, entry];
      const { tenants, ...rest } = entry as Record<string, unknown>;
      const problem = fileTenantsProblem(tenants);
      if (problem) problems.push(`${key}.${name}.tenants: ${problem}`);
      else tenantsOf.set(name, tenants as FileTenants);
      return [name, rest];
    });
    doc[key] = Object.fromEntries(copied);
  }
  if (problems.length > 0) throw new ConfigError(`INTEGRATIONS_FILE ${file}: ${problems.join('; ')}`);
  return tenantsOf;
}

/** The engine settings a file entry gives (those it omits stay as they are). */
function settingsChanged(existing: Integration, server: ImportedServer): boolean {
  const given = [...IMPORTED_SETTINGS, ...IMPORTED_DURATION_FIELDS] as (keyof ImportedServer & keyof Integration)[];
  return given.some((key) => server[key] !== undefined && server[key] !== existing[key]);
}
