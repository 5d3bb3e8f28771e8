import { proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { DiscoveredIntegration } from '../core/mcp/discover';

/** The type name the API starts; a string, so the API does not load workflow code. */
export const CAPABILITIES_WORKFLOW_TYPE = 'capabilitiesWorkflow';

export interface CapabilitiesInput {
  integrationId: string;
}

/**
 * Lists what one integration offers, for `GET /v1/integrations/:id/capabilities`. The API never
 * talks to MCP servers, so it asks a worker through this short workflow and waits for it.
 * An unreachable server is an answer (status "unreachable"), not a failure.
 */
const { listIntegrationCapabilities } = proxyActivities<ReturnType<typeof createActivities>>({
  // The activity bounds the MCP work itself, well inside this.
  startToCloseTimeout: '45 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: ['IntegrationNotFound'] },
});

export async function capabilitiesWorkflow(input: CapabilitiesInput): Promise<DiscoveredIntegration> {
  return listIntegrationCapabilities(input);
}
