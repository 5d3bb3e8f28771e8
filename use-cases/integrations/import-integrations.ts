import type { Integration, PublicIntegration } from '../../core/integration';
import { insertIntegration, takenIntegrationNames, toPublic } from '../../store/integrations/integrations';
import { inTransaction } from '../../store/pool';
import { requireAdmin, type Caller } from '../caller';
import { adminSettingsChanged, requireAdminForIntegrationName, requireAdminForSettings, requireAdminForStdio } from './integration-admin';
import type { ImportIntegrationsRequest } from './integration-requests';
import { nameTaken, refuseReservedNames, unlessNameTaken, type IntegrationDeps } from './integrations';
import { readMcpConfig, type Environment, type ImportedServer } from './mcp-config-import';

export interface ImportDeps extends IntegrationDeps {
  /** where `${VAR}` in the document is looked up; the composition root passes process.env */
  env: Environment;
}

/**
 * Importing a Claude Desktop or VS Code server list, all or nothing: read the document (a
 * variable is expanded only for the operator) → the operator's decisions → store every server
 * in the caller's tenant in one transaction, or none when a name is taken there. The integrations
 * as callers see them (no secret).
 */
export async function importIntegrations(
  deps: ImportDeps, caller: Caller, request: ImportIntegrationsRequest,
): Promise<PublicIntegration[]> {
  const servers = readMcpConfig(request, { env: deps.env, authorizeExpansion: (field) => requireAdmin(caller, field) });
  // readMcpConfig has checked that the document has exactly one of them.
  requireOperatorDecisions(deps, caller, request.mcpServers !== undefined ? 'mcpServers' : 'servers', servers);
  const names = servers.map((s) => s.name);
  refuseReservedNames(names);
  // Another request may take a name between the check and the inserts: then the unique index refuses it.
  const created = await unlessNameTaken(() => inTransaction(deps.db, async (tx) => {
    const taken = await takenIntegrationNames(tx, caller.tenantId, names);
    if (taken.length > 0) throw nameTaken(taken);
    const inserted: Integration[] = [];
    for (const server of servers) inserted.push(await insertIntegration(tx, server, caller.tenantId));
    return inserted;
  }), () => takenIntegrationNames(deps.db, caller.tenantId, names));
  return created.map(toPublic);
}

/** Stdio servers, names the operator's files refer to and admin-only settings, each named as the document places it. */
function requireOperatorDecisions(deps: IntegrationDeps, caller: Caller, list: string, servers: ImportedServer[]): void {
  const stdio = servers.filter((s) => s.transport.type === 'stdio').map((s) => s.name);
  if (stdio.length > 0) requireAdminForStdio(caller, `stdio servers ${stdio.join(', ')}`);
  for (const { name } of servers) requireAdminForIntegrationName(caller, deps.operatorNames, name, `body.${list}.${name}`);
  requireAdminForSettings(caller, servers.flatMap((s) => adminSettingsChanged(s).map((f) => `body.${list}.${s.name}.${f}`)));
}
