import { proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { ContextPreview } from '../activities/prompt-prefix';
import type { DiscoveredIntegration } from '../core/mcp/discover';

type Activities = ReturnType<typeof createActivities>;

/*
 * Short workflows through which the API asks a worker something: only workers talk to MCP
 * servers, so the API starts one of these and waits for it with a bound.
 */

const { listIntegrationCapabilities } = proxyActivities<Activities>({
  // The activity bounds the MCP work itself (20 s), well inside this.
  startToCloseTimeout: '45 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: ['IntegrationNotFound'] },
});

/** GET /v1/integrations/:id/capabilities. An unreachable server is an answer (status "unreachable"), not a failure. */
export async function capabilitiesWorkflow(input: { integrationId: string }): Promise<DiscoveredIntegration> {
  return listIntegrationCapabilities(input);
}

/** Servers get 20 s each, in parallel; one retry covers a worker that died mid-way. */
const { previewPromptPrefix } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumAttempts: 2 },
});

/** GET /v1/agents/:id/context: the prompt prefix an agent's next run would get. */
export async function contextPreviewWorkflow(input: { agentId: string }): Promise<ContextPreview> {
  return previewPromptPrefix(input);
}
