import { findIntegrations } from '../core/db/integrations';
import { putSnapshot } from '../core/db/run-store';
import { discoverIntegration, type DiscoveredIntegration } from '../core/mcp/discover';
import { assignExposedNames } from '../core/mcp/naming';
import type { DiscoveryResult } from '../workflows/definitions';
import type { McpToolRoute } from '../workflows/tool-routing';
import type { ActivityDeps } from './deps';
import { SNAPSHOT } from './run-context';

/** The full capabilities of a run's integrations; the workflow keeps only the routes. */
export interface DiscoverySnapshot {
  integrations: (DiscoveredIntegration & { exposedToolNames: string[] })[];
}

/** Each integration gets this long to connect and list; well under the bookkeeping activity's 1-minute timeout. */
const DISCOVERY_TIMEOUT_MS = 20_000;
/** Bound on a tool call that keeps reporting progress, when the integration sets none. */
export const DEFAULT_MAX_TOTAL_TIMEOUT_MS = 10 * 60_000;

export function createDiscoveryActivities({ db, logger, mcpPool }: ActivityDeps) {
  return {
    /**
     * Lists each enabled integration's capabilities once per run, stores the full snapshot,
     * and returns the tool-name map. An unreachable integration is reported, never fatal.
     */
    async discoverCapabilities({ runId, integrationIds }: { runId: string; integrationIds: string[] }): Promise<DiscoveryResult> {
      const found = await findIntegrations(db, integrationIds);
      const enabled = found.filter((i) => i.enabled);
      const missing = integrationIds.filter((id) => !found.some((i) => i.id === id));
      const discovered = await Promise.all(enabled.map((i) => discoverIntegration(mcpPool, i, logger, DISCOVERY_TIMEOUT_MS)));

      const flat = discovered.flatMap((d) => d.tools.map((t) => ({ integrationName: d.name, toolName: t.name })));
      const names = assignExposedNames(flat);
      const mcpRoutes: Record<string, McpToolRoute> = {};
      let n = 0;
      const snapshot: DiscoverySnapshot = { integrations: [] };
      for (const [i, d] of discovered.entries()) {
        const integration = enabled[i];
        const exposedToolNames: string[] = [];
        for (const tool of d.tools) {
          const name = names[n++];
          exposedToolNames.push(name);
          const safeToRepeat = Boolean(tool.annotations?.readOnlyHint || tool.annotations?.idempotentHint);
          mcpRoutes[name] = {
            type: 'mcp_tool', integrationId: d.id, integrationName: d.name, toolName: tool.name,
            toolTimeoutMs: integration.toolTimeoutMs,
            totalTimeoutMs: integration.maxTotalTimeoutMs ?? Math.max(integration.toolTimeoutMs, DEFAULT_MAX_TOTAL_TIMEOUT_MS),
            retryable: integration.trustAnnotations && safeToRepeat,
          };
        }
        snapshot.integrations.push({ ...d, exposedToolNames });
      }
      await putSnapshot(db, runId, SNAPSHOT.discovery, snapshot);

      const unreachable = [
        ...discovered.filter((d) => d.status === 'unreachable').map((d) => ({ integrationId: d.id, message: d.error ?? 'unreachable' })),
        ...missing.map((id) => ({ integrationId: id, message: 'the integration does not exist' })),
      ];
      if (integrationIds.length > 0) {
        logger.info({ runId, integrations: enabled.length, tools: flat.length, unreachable: unreachable.length }, 'MCP discovery done');
      }
      return { mcpRoutes, integrationCount: enabled.length, unreachable };
    },
  };
}
