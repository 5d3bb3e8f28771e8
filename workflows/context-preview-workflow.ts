import { proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { ContextPreview, ContextPreviewInput } from './definitions';

type Activities = ReturnType<typeof createActivities>;

/** Servers get 20 s each, in parallel; one retry covers a worker that died mid-way. */
const { previewPromptPrefix } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumAttempts: 2 },
});

/**
 * A short workflow for GET /v1/agents/:id/context: only workers talk to MCP servers, so the API
 * starts this and waits for it with a bound.
 */
export async function contextPreviewWorkflow(input: ContextPreviewInput): Promise<ContextPreview> {
  return previewPromptPrefix(input);
}
