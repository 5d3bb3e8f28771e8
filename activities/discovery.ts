import { findIntegrations, type Integration } from '../core/db/integrations';
import { inTransaction } from '../core/db/pool';
import { getSnapshot, putSnapshot } from '../core/db/run-store';
import { discoverIntegration, type DiscoveredIntegration } from '../core/mcp/discover';
import { assignExposedNames } from '../core/mcp/naming';
import type { DiscoveryResult, PinnedDiscoveryResult } from '../workflows/definitions';
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

function routesOf(integration: Integration, discovered: DiscoveredIntegration, names: string[]): Record<string, McpToolRoute> {
  const routes: Record<string, McpToolRoute> = {};
  discovered.tools.forEach((tool, i) => {
    const safeToRepeat = Boolean(tool.annotations?.readOnlyHint || tool.annotations?.idempotentHint);
    routes[names[i]] = {
      type: 'mcp_tool', integrationId: discovered.id, integrationName: discovered.name, toolName: tool.name,
      toolTimeoutMs: integration.toolTimeoutMs,
      totalTimeoutMs: integration.maxTotalTimeoutMs ?? Math.max(integration.toolTimeoutMs, DEFAULT_MAX_TOTAL_TIMEOUT_MS),
      retryable: integration.trustAnnotations && safeToRepeat,
      ...(integration.taskQueue ? { taskQueue: integration.taskQueue } : {}),
    };
  });
  return routes;
}

const unreachableOf = (d: DiscoveredIntegration) =>
  (d.status === 'unreachable' ? [{ integrationId: d.id, message: d.error ?? 'unreachable' }] : []);

export function createDiscoveryActivities({ db, logger, mcpPool }: ActivityDeps) {
  return {
    /**
     * Lists each enabled integration's capabilities once per run, stores the full snapshot,
     * and returns the tool-name map. An unreachable integration is reported, never fatal.
     * Integrations pinned to a task queue are left to discoverPinnedIntegration on that queue.
     */
    async discoverCapabilities({ runId, integrationIds }: { runId: string; integrationIds: string[] }): Promise<DiscoveryResult> {
      const found = await findIntegrations(db, integrationIds);
      const enabled = found.filter((i) => i.enabled && !i.taskQueue);
      const pinned = found.filter((i) => i.enabled && i.taskQueue).map((i) => ({ integrationId: i.id, taskQueue: i.taskQueue! }));
      const missing = integrationIds.filter((id) => !found.some((i) => i.id === id));
      const discovered = await Promise.all(enabled.map((i) => discoverIntegration(mcpPool, i, logger, DISCOVERY_TIMEOUT_MS)));

      const flat = discovered.flatMap((d) => d.tools.map((t) => ({ integrationName: d.name, toolName: t.name })));
      const names = assignExposedNames(flat);
      const mcpRoutes: Record<string, McpToolRoute> = {};
      const snapshot: DiscoverySnapshot = { integrations: [] };
      let n = 0;
      for (const [i, d] of discovered.entries()) {
        const exposedToolNames = names.slice(n, n + d.tools.length);
        n += d.tools.length;
        Object.assign(mcpRoutes, routesOf(enabled[i], d, exposedToolNames));
        snapshot.integrations.push({ ...d, exposedToolNames });
      }
      await putSnapshot(db, runId, SNAPSHOT.discovery, snapshot);

      const unreachable = [
        ...discovered.flatMap(unreachableOf),
        ...missing.map((id) => ({ integrationId: id, message: 'the integration does not exist' })),
      ];
      if (integrationIds.length > 0) {
        logger.info({ runId, integrations: enabled.length, pinned: pinned.length, tools: flat.length, unreachable: unreachable.length }, 'MCP discovery done');
      }
      return { mcpRoutes, integrationCount: enabled.length, unreachable, ...(pinned.length > 0 ? { pinned } : {}) };
    },

    /**
     * Discovery of one pinned integration, on a worker of its task queue (the only kind that can
     * start its server). Adds the integration to the run's discovery snapshot.
     */
    async discoverPinnedIntegration({ runId, integrationId }: { runId: string; integrationId: string }): Promise<PinnedDiscoveryResult> {
      const [integration] = await findIntegrations(db, [integrationId]);
      if (!integration) return { mcpRoutes: {}, unreachable: [{ integrationId, message: 'the integration does not exist' }] };
      const d = await discoverIntegration(mcpPool, integration, logger, DISCOVERY_TIMEOUT_MS);
      const exposedToolNames = assignExposedNames(d.tools.map((t) => ({ integrationName: d.name, toolName: t.name })));
      await inTransaction(db, async (tx) => {
        await tx.query('SELECT 1 FROM run_snapshots WHERE run_id = $1 AND kind = $2 FOR UPDATE', [runId, SNAPSHOT.discovery]);
        const snapshot = (await getSnapshot<DiscoverySnapshot>(tx, runId, SNAPSHOT.discovery)) ?? { integrations: [] };
        const others = snapshot.integrations.filter((i) => i.id !== d.id);
        await putSnapshot(tx, runId, SNAPSHOT.discovery, { integrations: [...others, { ...d, exposedToolNames }] });
      });
      logger.info({ runId, integrationId, taskQueue: integration.taskQueue, tools: d.tools.length, status: d.status }, 'pinned MCP discovery done');
      return { mcpRoutes: routesOf(integration, d, exposedToolNames), unreachable: unreachableOf(d) };
    },
  };
}
