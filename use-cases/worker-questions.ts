import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { ContextPreview } from '../core/context-preview';
import {
  AUTHORIZE_INTEGRATION_WORKFLOW_TYPE, CAPABILITIES_WORKFLOW_TYPE, COMPLETE_AUTHORIZATION_WORKFLOW_TYPE, CONTEXT_PREVIEW_WORKFLOW_TYPE,
  REVOKE_AUTHORIZATION_WORKFLOW_TYPE,
} from '../core/run';
import type { DiscoveredIntegration } from '../core/discovery';
import type {
  authorizeIntegrationWorkflow, capabilitiesWorkflow, completeAuthorizationWorkflow, contextPreviewWorkflow, revokeAuthorizationWorkflow,
} from '../workflows/helper-workflows';
import { EngineError } from '../core/engine-error';

/*
 * Questions only a worker can answer (only workers talk to MCP servers): the API starts a short
 * workflow and waits for it with a bound.
 */

export interface WorkerQuestionDeps {
  client: Client;
  taskQueue: string;
  logger: { debug(obj: object, msg: string): void };
  /** how long the API waits for a worker's answer before a 504 */
  waitMs: number;
  /** aborted when the caller went away: nobody reads the answer, so the API stops waiting and ends the question */
  callerGone?: AbortSignal;
}

/** Each server gets 20 s on the worker, in parallel; a first npx spawn can take most of that. */
export const DEFAULT_CONTEXT_PREVIEW_WAIT_MS = 45_000;
/** Slack for the server to close a workflow nobody waits for any more (no worker, or a lost API process). */
const EXECUTION_TIMEOUT_MARGIN_MS = 30_000;

interface Question<W extends Workflow> {
  type: string;
  workflowId: string;
  arg: Parameters<W>[0];
  summary: string;
  /** "listed the capabilities of integration x": what no worker did in time */
  what: string;
  /** the failure of a worker's answer, by the failure type its activity threw */
  failed: (type: string | undefined, message: string) => EngineError;
}

async function askWorker<W extends Workflow>(deps: WorkerQuestionDeps, q: Question<W>): Promise<Awaited<ReturnType<W>>> {
  const handle = await deps.client.workflow.start(q.type, {
    taskQueue: deps.taskQueue,
    workflowId: q.workflowId,
    args: [q.arg],
    workflowExecutionTimeout: deps.waitMs + EXECUTION_TIMEOUT_MARGIN_MS,
    staticSummary: q.summary,
  });
  const abort = new AbortController();
  // Aborting cancels the history long-poll itself, so no gRPC call outlives the HTTP request.
  const timer = setTimeout(() => abort.abort(), deps.waitMs);
  const gone = () => abort.abort();
  if (deps.callerGone?.aborted) gone();
  deps.callerGone?.addEventListener('abort', gone, { once: true });
  try {
    // The client cancels a call when its signal aborts, never one begun under a signal aborted
    // already: a caller gone while the workflow started is not waited for (nor a long poll left behind).
    if (abort.signal.aborted) throw new Error('the caller went away before the question was asked');
    return await deps.client.withAbortSignal(abort.signal, () => handle.result()) as Awaited<ReturnType<W>>;
  } catch (err) {
    if (abort.signal.aborted) {
      // Nobody will read a late answer (or any: the caller went away): stop the workflow rather than leave it for the execution timeout.
      await handle.terminate('the API stopped waiting')
        .catch((e: Error) => deps.logger.debug({ err: e.message }, 'terminating a helper workflow failed'));
      throw new EngineError('timeout', `No worker ${q.what} within ${deps.waitMs} ms`);
    }
    if (!(err instanceof WorkflowFailedError)) throw err;
    // The activity failure wraps the application failure that carries the type.
    let cause: unknown = err.cause;
    while (cause instanceof Error && cause.cause && !(cause as { type?: string }).type) cause = cause.cause;
    throw q.failed((cause as { type?: string } | undefined)?.type, cause instanceof Error ? cause.message : err.message);
  } finally {
    clearTimeout(timer);
    deps.callerGone?.removeEventListener('abort', gone);
  }
}

/** An integration a question is about; a pinned one is asked on its task queue, where its server can run. */
type IntegrationTarget = { id: string; name: string; taskQueue: string | null };

export type Capabilities = Pick<DiscoveredIntegration, 'tools' | 'resources' | 'resourceTemplates' | 'prompts'>;

/** One integration's capabilities. An unreachable server answers 502 with the reason; no answer in time, 504. */
export async function fetchCapabilities(deps: WorkerQuestionDeps, integration: IntegrationTarget): Promise<Capabilities> {
  const listed = await askWorker<typeof capabilitiesWorkflow>(deps, {
    type: CAPABILITIES_WORKFLOW_TYPE,
    // Named after the integration, so the Web UI shows what each one was for.
    workflowId: `capabilities-${integration.id}-${randomUUID()}`,
    arg: { integrationId: integration.id, ...(integration.taskQueue ? { taskQueue: integration.taskQueue } : {}) },
    summary: `capabilities of integration ${integration.name}`,
    what: `listed the capabilities of integration ${integration.name}`,
    // Deleted between the API's check and the worker's read.
    failed: (type, message) => (type === 'IntegrationNotFound'
      ? new EngineError('not_found', `Integration ${integration.id} does not exist`)
      : new EngineError('unreachable', `Listing the capabilities of integration ${integration.name} failed: ${message}`)),
  });
  if (listed.status === 'unreachable') {
    throw new EngineError('unreachable', `Integration ${integration.name} is unreachable: ${listed.error ?? 'no reason given'}`);
  }
  return { tools: listed.tools, resources: listed.resources, resourceTemplates: listed.resourceTemplates, prompts: listed.prompts };
}

/** The prompt prefix an agent's next run (on the thread `threadId`, when given) would get. Nothing is stored and no run starts. */
export function previewContext(deps: WorkerQuestionDeps, agentId: string, threadId?: string): Promise<ContextPreview> {
  return askWorker<typeof contextPreviewWorkflow>(deps, {
    type: CONTEXT_PREVIEW_WORKFLOW_TYPE,
    workflowId: `context-preview-${randomUUID()}`,
    arg: { agentId, ...(threadId !== undefined ? { threadId } : {}) },
    summary: `context preview of agent ${agentId}`,
    what: `built the context of agent ${agentId}`,
    failed: (type, message) => (type === 'AgentNotFound' || type === 'ThreadNotFound'
      ? new EngineError('not_found', message)
      : new EngineError('preview_failed', `Building the context of agent ${agentId} failed: ${message}`)),
  });
}


const oauthFailure = (integration: IntegrationTarget, doing: string) => (type: string | undefined, message: string) => {
  if (type === 'IntegrationNotFound') return new EngineError('not_found', `Integration ${integration.id} does not exist`);
  if (type === 'NotAuthorizable') return new EngineError('not_authorizable', message);
  return new EngineError('authorization_failed', `${doing} ${integration.name} failed: ${message}`);
};

/** Discovery and registration on a worker; the id of the authorization, whose URL PostgreSQL keeps. */
export function beginIntegrationAuthorization(deps: WorkerQuestionDeps, integration: IntegrationTarget, redirectUrl: string) {
  return askWorker<typeof authorizeIntegrationWorkflow>(deps, {
    type: AUTHORIZE_INTEGRATION_WORKFLOW_TYPE,
    workflowId: `authorize-${integration.id}-${randomUUID()}`,
    arg: { integrationId: integration.id, redirectUrl, ...(integration.taskQueue ? { taskQueue: integration.taskQueue } : {}) },
    summary: `authorization of integration ${integration.name}`,
    what: `started the authorization of integration ${integration.name}`,
    failed: oauthFailure(integration, 'Starting the authorization of'),
  });
}

/** The code exchange of a claimed callback, on a worker. */
export function completeIntegrationAuthorization(deps: WorkerQuestionDeps, integration: IntegrationTarget, input: { stateId: string }) {
  return askWorker<typeof completeAuthorizationWorkflow>(deps, {
    type: COMPLETE_AUTHORIZATION_WORKFLOW_TYPE,
    workflowId: `authorize-callback-${integration.id}-${randomUUID()}`,
    arg: { ...input, ...(integration.taskQueue ? { taskQueue: integration.taskQueue } : {}) },
    summary: `authorization callback of integration ${integration.name}`,
    what: `completed the authorization of integration ${integration.name}`,
    failed: oauthFailure(integration, 'Completing the authorization of'),
  });
}

/** Revocation at the server (when it offers it) and forgetting the tokens, on a worker. */
export function revokeIntegrationAuthorization(deps: WorkerQuestionDeps, integration: IntegrationTarget) {
  return askWorker<typeof revokeAuthorizationWorkflow>(deps, {
    type: REVOKE_AUTHORIZATION_WORKFLOW_TYPE,
    workflowId: `revoke-authorization-${integration.id}-${randomUUID()}`,
    arg: { integrationId: integration.id, ...(integration.taskQueue ? { taskQueue: integration.taskQueue } : {}) },
    summary: `revocation of integration ${integration.name}`,
    what: `revoked the authorization of integration ${integration.name}`,
    failed: oauthFailure(integration, 'Revoking the authorization of'),
  });
}
