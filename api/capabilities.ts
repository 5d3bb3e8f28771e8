import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { DiscoveredIntegration } from '../core/mcp/discover';
import type { Logger } from '../core/logger';
import { CAPABILITIES_WORKFLOW_TYPE, type CapabilitiesInput, type capabilitiesWorkflow } from '../workflows/capabilities-workflow';
import { HttpProblem } from './problem';

export interface CapabilitiesDeps {
  client: Client;
  taskQueue: string;
  logger: Logger;
  /** how long the API waits for a worker's answer before a 504 */
  waitMs: number;
}

export type Capabilities = Pick<DiscoveredIntegration, 'tools' | 'resources' | 'resourceTemplates' | 'prompts'>;

/** Slack for the server to close a workflow nobody waits for any more (no worker, or a lost API process). */
const EXECUTION_TIMEOUT_MARGIN_MS = 30_000;

/**
 * Asks a worker for one integration's capabilities through a short workflow, and waits at most
 * `waitMs`. An unreachable server answers 502 with the reason; no answer in time, 504.
 */
export async function fetchCapabilities(deps: CapabilitiesDeps, integration: { id: string; name: string }): Promise<Capabilities> {
  const handle = await deps.client.workflow.start<typeof capabilitiesWorkflow>(CAPABILITIES_WORKFLOW_TYPE, {
    taskQueue: deps.taskQueue,
    // Named after the integration, so the Web UI shows what each one was for.
    workflowId: `capabilities-${integration.id}-${randomUUID()}`,
    args: [{ integrationId: integration.id } satisfies CapabilitiesInput],
    workflowExecutionTimeout: deps.waitMs + EXECUTION_TIMEOUT_MARGIN_MS,
  });
  const abort = new AbortController();
  // Aborting cancels the history long-poll itself, so no gRPC call outlives the HTTP request.
  const timer = setTimeout(() => abort.abort(), deps.waitMs);
  let listed: DiscoveredIntegration;
  try {
    listed = await deps.client.withAbortSignal(abort.signal, () => handle.result());
  } catch (err) {
    if (abort.signal.aborted) {
      // Nobody will read a late answer: stop the workflow rather than leave it for the execution timeout.
      await handle.terminate('the API stopped waiting').catch((e: Error) => deps.logger.debug({ err: e.message }, 'terminating a capabilities workflow failed'));
      throw new HttpProblem(504, `No worker listed the capabilities of integration ${integration.name} within ${deps.waitMs} ms`, 'timeout');
    }
    if (err instanceof WorkflowFailedError) throw failureProblem(err, integration);
    throw err;
  } finally {
    clearTimeout(timer);
  }
  if (listed.status === 'unreachable') {
    throw new HttpProblem(502, `Integration ${integration.name} is unreachable: ${listed.error ?? 'no reason given'}`, 'unreachable');
  }
  return { tools: listed.tools, resources: listed.resources, resourceTemplates: listed.resourceTemplates, prompts: listed.prompts };
}

function failureProblem(err: WorkflowFailedError, integration: { id: string; name: string }): HttpProblem {
  // The activity failure wraps the application failure that carries the type.
  let cause: unknown = err.cause;
  while (cause instanceof Error && cause.cause && !(cause as { type?: string }).type) cause = cause.cause;
  const type = (cause as { type?: string } | undefined)?.type;
  // Deleted between the API's check and the worker's read.
  if (type === 'IntegrationNotFound') return new HttpProblem(404, `Integration ${integration.id} does not exist`, 'not_found');
  const message = cause instanceof Error ? cause.message : err.message;
  return new HttpProblem(502, `Listing the capabilities of integration ${integration.name} failed: ${message}`, 'unreachable');
}
