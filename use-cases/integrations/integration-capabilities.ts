import type { Db } from '../../store/pool';
import { authorizationView, type AuthorizationView } from '../../store/integrations/oauth';
import { EngineError } from '../../core/engine-error';
import { fetchCapabilities, type Capabilities, type WorkerQuestionDeps } from '../worker-questions';
import type { Caller } from '../caller';
import { loadIntegration } from './integrations';

/**
 * An integration's tools, resources, templates and prompts, as a worker lists them, with its
 * OAuth state. A server that turns out to want authorization is a 409 saying so, not a 502.
 */
export async function integrationCapabilities(
  deps: WorkerQuestionDeps & { db: Db }, caller: Caller, ref: string,
): Promise<Capabilities & AuthorizationView> {
  const integration = await loadIntegration(deps.db, caller.tenantId, ref);
  try {
    const listed = await fetchCapabilities(deps, integration);
    return { ...(await authorizationView(deps.db, integration)), ...listed };
  } catch (err) {
    if (!(err instanceof EngineError) || err.code !== 'unreachable') throw err;
    // The worker may just have learnt that the server wants authorization (a 401 with resource metadata).
    const view = await authorizationView(deps.db, integration);
    if (view.authorization !== 'required' && view.authorization !== 'expired') throw err;
    const how = `an operator must authorize it (POST /v1/integrations/${integration.id}/authorize)`;
    throw new EngineError('authorization_required', `Integration ${integration.name} needs authorization; ${how}`, { ...view });
  }
}
