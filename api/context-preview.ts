import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { contextPreviewWorkflow } from '../workflows/context-preview-workflow';
import { CONTEXT_PREVIEW_WORKFLOW_TYPE, type ContextPreview, type ContextPreviewInput } from '../workflows/definitions';
import { HttpProblem } from './problem';

export interface ContextPreviewDeps {
  client: Client;
  taskQueue: string;
  logger: { debug(obj: object, msg: string): void };
  /** how long the API waits for a worker's answer before a 504 */
  waitMs: number;
}

/** Each server gets 20 s on the worker, in parallel; a first npx spawn can take most of that. */
export const DEFAULT_CONTEXT_PREVIEW_WAIT_MS = 45_000;
/** Slack for the server to close a workflow nobody waits for any more (no worker, or a lost API process). */
const EXECUTION_TIMEOUT_MARGIN_MS = 30_000;

/**
 * The prefix an agent's next run would get, built by a worker (only workers talk to MCP) through
 * a short workflow. Nothing is stored and no run starts. No answer within `waitMs`: 504.
 */
export async function previewContext(deps: ContextPreviewDeps, agentId: string): Promise<ContextPreview> {
  const handle = await deps.client.workflow.start<typeof contextPreviewWorkflow>(CONTEXT_PREVIEW_WORKFLOW_TYPE, {
    taskQueue: deps.taskQueue,
    workflowId: `context-preview-${randomUUID()}`,
    args: [{ agentId } satisfies ContextPreviewInput],
    workflowExecutionTimeout: deps.waitMs + EXECUTION_TIMEOUT_MARGIN_MS,
    staticSummary: `context preview of agent ${agentId}`,
  });
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), deps.waitMs);
  try {
    return await deps.client.withAbortSignal(abort.signal, () => handle.result());
  } catch (err) {
    if (abort.signal.aborted) {
      await handle.terminate('the API stopped waiting').catch((e: Error) => deps.logger.debug({ err: e.message }, 'terminating a context preview failed'));
      throw new HttpProblem(504, `No worker built the context of agent ${agentId} within ${deps.waitMs} ms`, 'timeout');
    }
    if (err instanceof WorkflowFailedError) throw failureProblem(err, agentId);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

function failureProblem(err: WorkflowFailedError, agentId: string): HttpProblem {
  let cause: unknown = err.cause;
  while (cause instanceof Error && cause.cause && !(cause as { type?: string }).type) cause = cause.cause;
  const type = (cause as { type?: string } | undefined)?.type;
  // Deleted between the API's check and the worker's read.
  if (type === 'AgentNotFound') return new HttpProblem(404, `Agent ${agentId} does not exist`, 'not_found');
  const message = cause instanceof Error ? cause.message : err.message;
  return new HttpProblem(502, `Building the context of agent ${agentId} failed: ${message}`, 'preview_failed');
}
