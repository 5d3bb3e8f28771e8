import { updateIntegration } from '../../store/integrations/integrations';
import { requireAdmin, type Caller } from '../caller';
import { adminFieldsChanged, adminSettingsChanged, requireAdminForSettings } from './integration-admin';
import { patchTransport } from './integration-input';
import { storedSettings, type ChangeIntegrationRequest } from './integration-requests';
import {
  integrationNotFound, integrationView, loadIntegration, refuseReservedNames, unlessNameTaken, type IntegrationDeps, type IntegrationView,
} from './integrations';

const RENAME_REASON = 'agent files and INTEGRATIONS_FILE find integrations by name, so renaming one changes what they find';

/**
 * Changing an integration: the given transport fields are merged into the stored transport;
 * what decides what runs or where secrets go, a new name, and admin-only settings are the
 * operator's. Workers reconnect with the new settings.
 */
export async function changeIntegration(
  deps: IntegrationDeps, caller: Caller, ref: string, request: ChangeIntegrationRequest,
): Promise<IntegrationView> {
  const { transport: transportPatch, ...changes } = storedSettings(request);
  refuseReservedNames([changes.name]);
  const current = await loadIntegration(deps.db, caller.tenantId, ref);
  if (changes.name !== undefined && changes.name !== current.name) requireAdmin(caller, 'body.name', RENAME_REASON);
  const transport = transportPatch && patchTransport(current.transport, transportPatch);
  const decisive = transport ? adminFieldsChanged(current.transport, transport) : [];
  if (decisive.length > 0) requireAdmin(caller, decisive.map((f) => `body.transport.${f}`).join(', '));
  requireAdminForSettings(caller, adminSettingsChanged(changes, current).map((f) => `body.${f}`));
  const updated = await unlessNameTaken(
    () => updateIntegration(deps.db, current.id, { ...changes, ...(transport ? { transport } : {}) }),
    () => [changes.name ?? current.name],
  );
  if (!updated) throw integrationNotFound(current.id);
  return integrationView(deps.db, updated);
}
