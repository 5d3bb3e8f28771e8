import { insertIntegration } from '../../store/integrations/integrations';
import type { Caller } from '../caller';
import { adminSettingsChanged, requireAdminForIntegrationName, requireAdminForSettings, requireAdminForStdio } from './integration-admin';
import { storedSettings, type CreateIntegrationRequest } from './integration-requests';
import { integrationView, refuseReservedNames, unlessNameTaken, type IntegrationDeps, type IntegrationView } from './integrations';

/**
 * Registering an MCP server in the caller's tenant: the operator's decisions first (a name their files refer to, a
 * command a worker would run, the settings only they may set), then the integration is stored.
 */
export async function createIntegration(
  deps: IntegrationDeps, caller: Caller, request: CreateIntegrationRequest,
): Promise<IntegrationView> {
  const { transport, ...settings } = storedSettings(request);
  refuseReservedNames([request.name]);
  requireAdminForIntegrationName(caller, deps.operatorNames, request.name, 'body.name');
  if (transport.type === 'stdio') requireAdminForStdio(caller, 'body.transport.type (stdio)');
  requireAdminForSettings(caller, adminSettingsChanged(settings).map((f) => `body.${f}`));
  const created = await unlessNameTaken(
    () => insertIntegration(deps.db, { ...settings, transport }, caller.tenantId), () => [request.name],
  );
  return integrationView(deps.db, created);
}
