import { ApplicationFailure } from '@temporalio/activity';
import { findIntegration } from '../core/db/integrations';
import { discoverIntegration, type DiscoveredIntegration } from '../core/mcp/discover';
import type { CapabilitiesInput } from '../workflows/capabilities-workflow';
import type { ActivityDeps } from './deps';

/** Under the API's 30 s wait, so that an unreachable server is reported as such rather than as a timeout. */
const CAPABILITIES_TIMEOUT_MS = 20_000;

export function createCapabilitiesActivities({ db, logger, mcpPool }: ActivityDeps) {
  return {
    /**
     * Connects (through the worker's pool, so a later run reuses the connection) and lists one
     * integration's tools, resources, templates and prompts. A disabled integration is listed too:
     * an operator may want to look before enabling it.
     */
    async listIntegrationCapabilities({ integrationId }: CapabilitiesInput): Promise<DiscoveredIntegration> {
      const integration = await findIntegration(db, integrationId);
      if (!integration) throw ApplicationFailure.nonRetryable(`Integration ${integrationId} does not exist`, 'IntegrationNotFound');
      return discoverIntegration(mcpPool, integration, logger, CAPABILITIES_TIMEOUT_MS);
    },
  };
}
