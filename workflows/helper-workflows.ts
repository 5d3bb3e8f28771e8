import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { ContextPreview } from '../core/context-preview';
import type { DiscoveredIntegration } from '../core/discovery';
import { toolTaskQueue } from '../core/tool-call';

type Activities = ReturnType<typeof createActivities>;

/*
 * Short workflows through which the API asks a worker something: only workers talk to MCP
 * servers, so the API starts one of these and waits for it with a bound. What they ask of MCP
 * servers is tool work: it runs in the workers' tool slots (core/tool-call.ts toolTaskQueue).
 */

/** The integration's own queue when it is pinned (only its workers may start its server), else the workers' tool queue. */
const toolWorkQueue = (pinned: string | undefined) => pinned ?? toolTaskQueue(workflowInfo().taskQueue);

/** On a worker of the integration's task queue when it is pinned: only those may start its server. */
const capabilityActivities = (taskQueue: string | undefined) => proxyActivities<Activities>({
  // The activity bounds the MCP work itself (20 s), well inside this.
  startToCloseTimeout: '45 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: ['IntegrationNotFound'] },
  taskQueue: toolWorkQueue(taskQueue),
});

/** GET /v1/integrations/:id/capabilities. An unreachable server is an answer (status "unreachable"), not a failure. */
export async function capabilitiesWorkflow(input: { integrationId: string; taskQueue?: string }): Promise<DiscoveredIntegration> {
  return capabilityActivities(input.taskQueue).listIntegrationCapabilities({ integrationId: input.integrationId });
}

/** GET /v1/agents/:id/context: the prompt prefix an agent's next run would get (on the thread `threadId`, when given). */
export async function contextPreviewWorkflow(input: { agentId: string; threadId?: string }): Promise<ContextPreview> {
  // Servers get 20 s each, in parallel; one retry covers a worker that died mid-way.
  return proxyActivities<Activities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1s', maximumAttempts: 2 },
    taskQueue: toolWorkQueue(undefined),
  }).previewPromptPrefix(input);
}

/**
 * The steps of an integration's OAuth authorization (activities/oauth.ts), on a worker of the
 * integration's task queue when it is pinned: that is where its server is reachable. None retries:
 * an authorization code works once, and a person is waiting for the answer.
 */
const oauthActivities = (taskQueue: string | undefined) => proxyActivities<Activities>({
  startToCloseTimeout: '45 seconds',
  retry: { maximumAttempts: 1 },
  taskQueue: toolWorkQueue(taskQueue),
});

/*
 * The OAuth helpers carry ids only: the authorization URL holds the `state` (the callback's only
 * proof) and the callback brings a code; both stay sealed in PostgreSQL (store/integrations/oauth-states.ts).
 */

/** POST /v1/integrations/:id/authorize: the id of the authorization begun. */
export async function authorizeIntegrationWorkflow(
  input: { integrationId: string; redirectUrl: string; taskQueue?: string },
): Promise<{ stateId: string; expiresAt: string }> {
  const { integrationId, redirectUrl } = input;
  return oauthActivities(input.taskQueue).beginIntegrationAuthorization({ integrationId, redirectUrl });
}

/** GET /oauth/callback, once its state is claimed and its code stored. */
export async function completeAuthorizationWorkflow(input: { stateId: string; taskQueue?: string }): Promise<{ integrationName: string }> {
  return oauthActivities(input.taskQueue).completeIntegrationAuthorization({ stateId: input.stateId });
}

/** DELETE /v1/integrations/:id/authorization. */
export async function revokeAuthorizationWorkflow(
  input: { integrationId: string; taskQueue?: string },
): Promise<{ revokedAtServer: boolean }> {
  return oauthActivities(input.taskQueue).revokeIntegrationAuthorization({ integrationId: input.integrationId });
}
