import type { Integration, PublicIntegration } from '../../core/integration';
import { RESERVED_INTEGRATION_NAME } from '../../core/sub-agents';
import { isUniqueViolation } from '../../store/agents';
import { findTenantIntegration, listIntegrations, toPublic } from '../../store/integrations/integrations';
import { authorizationView, authorizationViews, type AuthorizationView } from '../../store/integrations/oauth';
import { readEraProbes } from '../../store/integrations/era-probes';
import { eraInUse, type ProtocolEra } from '../../core/protocol-era';
import type { Db } from '../../store/pool';
import { resolveRef } from '../../store/refs';
import type { OperatorNames } from '../../platform/operator-names';
import { EngineError } from '../../core/engine-error';

/** What the integration use cases read and write, and the names the operator's files refer to. */
export interface IntegrationDeps {
  db: Db;
  /** taking or freeing a name these refer to is the operator's act */
  operatorNames: OperatorNames;
}

/** An integration as callers see it: no secret, its OAuth state (never a token), and the protocol era the engine speaks with it. */
export type IntegrationView = PublicIntegration & AuthorizationView & { protocolEra: ProtocolEra | null };

export const integrationNotFound = (ref: string) => new EngineError('not_found', `Integration ${ref} does not exist`);

/** The tenant's integration, by id or by name; a 404 otherwise (another tenant's integration too, in the same words). */
export async function loadIntegration(db: Db, tenantId: string, ref: string): Promise<Integration> {
  const id = await resolveRef(db, 'integrations', tenantId, ref);
  const integration = id === undefined ? undefined : await findTenantIntegration(db, tenantId, id);
  if (!integration) throw integrationNotFound(ref);
  return integration;
}

export async function integrationView(db: Db, integration: Integration): Promise<IntegrationView> {
  const [authorization, probes] = await Promise.all([authorizationView(db, integration), readEraProbes(db, [integration])]);
  return { ...toPublic(integration), ...authorization, protocolEra: eraInUse(integration.protocol, probes.get(integration.id)) };
}

/** The tenant's integrations as callers see them, oldest first. */
export async function listIntegrationViews(db: Db, tenantId: string): Promise<IntegrationView[]> {
  const integrations = await listIntegrations(db, tenantId);
  const [views, probes] = await Promise.all([authorizationViews(db, integrations), readEraProbes(db, integrations)]);
  return integrations.map((i) => ({ ...toPublic(i), ...views.get(i.id)!, protocolEra: eraInUse(i.protocol, probes.get(i.id)) }));
}

/**
 * Runs `store`, answering 409 naming the taken names when it breaks the unique name: a unique
 * violation can only be the name, since ids are random. `taken` says which names were taken.
 */
export async function unlessNameTaken<T>(store: () => Promise<T>, taken: () => string[] | Promise<string[]>): Promise<T> {
  try {
    return await store();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(await taken());
    throw err;
  }
}

/** `agent` is reserved: the LLM sees a run's sub-agents as the tools `agent__<name>`. */
export function refuseReservedNames(names: (string | undefined)[]): void {
  if (names.includes(RESERVED_INTEGRATION_NAME)) {
    throw new EngineError('conflict', `The integration name ${RESERVED_INTEGRATION_NAME} is reserved: `
      + `sub-agents are the tools ${RESERVED_INTEGRATION_NAME}__<name>`);
  }
}

export const nameTaken = (names: string[]) => new EngineError('conflict', `An integration named ${names.join(', ')} already exists`);
