import { deleteUnreferencedIntegration } from '../../store/integrations/integrations';
import { inTransaction } from '../../store/pool';
import type { Caller } from '../caller';
import { EngineError } from '../../core/engine-error';
import { requireAdminForIntegrationName } from './integration-admin';
import { integrationNotFound, loadIntegration, type IntegrationDeps } from './integrations';

/**
 * Deleting an integration no agent uses (in_use names the agents that do); freeing a name the
 * operator's files refer to is the operator's act.
 */
export async function deleteIntegration(deps: IntegrationDeps, caller: Caller, ref: string): Promise<void> {
  const { id, name } = await loadIntegration(deps.db, caller.tenantId, ref);
  requireAdminForIntegrationName(caller, deps.operatorNames, name, `integration ${name}`);
  const outcome = await inTransaction(deps.db, (tx) => deleteUnreferencedIntegration(tx, id));
  if (outcome.status === 'not_found') throw integrationNotFound(ref);
  if (outcome.status === 'referenced') {
    const agents = outcome.agents.map((a) => `${a.name} (${a.id})`).join(', ');
    throw new EngineError('in_use', `Integration ${ref} is used by agents ${agents}: remove it from them first`);
  }
}
