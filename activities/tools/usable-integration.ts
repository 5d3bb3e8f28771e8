import { findIntegration } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import type { Queryable } from '../../store/pool';

/**
 * The integration a tool call names, if a call may use it now: it may have been disabled or
 * deleted since the run started. Only workers of a pinned integration's queue may start its
 * server, and only its tools are routed there, so its resources and prompts are refused.
 */
export function integrationUsable(
  integration: Integration | undefined, id: string, opts: { pinnedAllowed: boolean },
): Integration | string {
  if (!integration) return `integration ${id} does not exist`;
  if (!integration.enabled) return `integration ${integration.name} is disabled`;
  if (integration.taskQueue && !opts.pinnedAllowed) {
    return `integration ${integration.name} is pinned to task queue ${integration.taskQueue}, and only its tools can be used`;
  }
  return integration;
}

/** integrationUsable, reading the integration first. */
export async function usableIntegration(db: Queryable, id: string, opts: { pinnedAllowed: boolean }): Promise<Integration | string> {
  return integrationUsable(await findIntegration(db, id), id, opts);
}
