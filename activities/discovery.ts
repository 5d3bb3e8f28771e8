import { ApplicationFailure } from '@temporalio/activity';
import { approvalRequirement } from '../core/approval';
import type { McpToolRoute } from '../core/tool-call';
import { findIntegration } from '../store/integrations/integrations';
import { DEFAULT_MAX_TOTAL_TIMEOUT_MS, type Integration } from '../core/integration';
import { updateSnapshot } from '../store/runs/snapshots';
import { discoverIntegration } from '../mcp-client/discover';
import { type DiscoveredIntegration } from '../core/discovery';
import { assignExposedNames, exposedToolName } from '../mcp-client/naming';
import type { ActivityDeps } from './deps';
import { SNAPSHOT, type DiscoverySnapshot } from './run-snapshots';

/** Each integration gets this long to connect and list, in parallel; well inside prepareRun's timeout. */
const DISCOVERY_TIMEOUT_MS = 20_000;
/** Under the API's 30 s wait, so that an unreachable server is reported as such rather than as a timeout. */
const LISTING_TIMEOUT_MS = 20_000;

export interface RunDiscovery {
  /** routes of discovered MCP tools, keyed by the exposed name (the tool-name map) */
  mcpRoutes: Record<string, McpToolRoute>;
  integrationCount: number;
  /** integrations pinned to their own task queue: discovered there, by discoverPinnedIntegration */
  pinned: { integrationId: string; taskQueue: string }[];
  /** for the run's discovery snapshot: its caller stores it */
  snapshot: DiscoverySnapshot;
  /** the agent's integrations as read, whether or not discovered */
  integrations: Integration[];
  /** integrations whose tools could not be listed for want of OAuth authorization */
  unauthorized: { prefix: string; integrationName: string }[];
}

function routesOf(integration: Integration, discovered: DiscoveredIntegration, names: string[]): Record<string, McpToolRoute> {
  const routes: Record<string, McpToolRoute> = {};
  discovered.tools.forEach((tool, i) => {
    const safeToRepeat = Boolean(tool.annotations?.readOnlyHint || tool.annotations?.idempotentHint);
    const hints = { name: tool.name, readOnlyHint: tool.annotations?.readOnlyHint };
    const approval = approvalRequirement(integration.approval, hints, integration.trustAnnotations);
    routes[names[i]] = {
      integrationId: discovered.id, integrationName: discovered.name, toolName: tool.name,
      toolTimeoutMs: integration.toolTimeoutMs,
      totalTimeoutMs: integration.maxTotalTimeoutMs ?? Math.max(integration.toolTimeoutMs, DEFAULT_MAX_TOTAL_TIMEOUT_MS),
      retryable: (integration.trustAnnotations && safeToRepeat) || integration.retryNonIdempotent,
      maxConcurrentCalls: integration.maxConcurrentCalls,
      ...(integration.elicitation || integration.sampling !== 'never' ? { elicitationTimeoutMs: integration.elicitationTimeoutMs } : {}),
      ...(integration.taskQueue ? { taskQueue: integration.taskQueue } : {}),
      ...(approval ? { approval } : {}),
      ...(tool.taskSupport ? { task: { timeoutMs: integration.taskTimeoutMs } } : {}),
    };
  });
  return routes;
}

/**
 * Lists each enabled integration's capabilities once per run (`found`: the agent's integrations
 * of `integrationIds`, as read with the run), and returns the tool-name map and
 * the full snapshot, for the caller to store. An unreachable integration is reported in the
 * snapshot (and so in the tool descriptions), never fatal. Pinned integrations are left to their
 * own queue.
 */
export async function discoverRun(
  { logger, mcpPool }: Pick<ActivityDeps, 'logger' | 'mcpPool'>, runId: string, integrationIds: string[], found: Integration[],
): Promise<RunDiscovery> {
  const enabled = found.filter((i) => i.enabled && !i.taskQueue);
  const pinned = found.filter((i) => i.enabled && i.taskQueue).map((i) => ({ integrationId: i.id, taskQueue: i.taskQueue! }));
  const discovered = await Promise.all(enabled.map((i) => discoverIntegration(mcpPool, i, logger, DISCOVERY_TIMEOUT_MS)));

  const names = assignExposedNames(discovered.flatMap((d) => d.tools.map((t) => ({ integrationName: d.name, toolName: t.name }))));
  const mcpRoutes: Record<string, McpToolRoute> = {};
  const snapshot: DiscoverySnapshot = { integrations: [] };
  let n = 0;
  for (const [i, d] of discovered.entries()) {
    const exposedToolNames = names.slice(n, n + d.tools.length);
    n += d.tools.length;
    Object.assign(mcpRoutes, routesOf(enabled[i], d, exposedToolNames));
    snapshot.integrations.push({ ...d, exposedToolNames });
  }
  if (integrationIds.length > 0) {
    const unreachable = discovered.filter((d) => d.status === 'unreachable').length + integrationIds.length - found.length;
    logger.info({ runId, integrations: enabled.length, pinned: pinned.length, tools: names.length, unreachable }, 'MCP discovery done');
  }
  const unauthorized = discovered.filter((d) => d.needsAuthorization)
    .map((d) => ({ prefix: exposedToolName(d.name, ''), integrationName: d.name }));
  return { mcpRoutes, integrationCount: enabled.length, pinned, snapshot, integrations: found, unauthorized };
}

/**
 * A run's discovery as another run recorded it (a replay, docs/time-travel.md): the recorded
 * capabilities and tool names, each integration's routes built from its settings as they are now
 * (their timeouts and approval policy hold for calls that go live); asks no server. An
 * integration deleted since is left out. `found`: the recorded integrations as read now.
 */
export function recordedDiscovery(recorded: DiscoverySnapshot, found: Integration[]): RunDiscovery {
  const kept = recorded.integrations.flatMap((d) => {
    const integration = found.find((i) => i.id === d.id);
    return integration ? [{ d, integration }] : [];
  });
  const mcpRoutes: RunDiscovery['mcpRoutes'] = {};
  for (const { d, integration } of kept) Object.assign(mcpRoutes, routesOf(integration, d, d.exposedToolNames));
  const unauthorized = kept.filter(({ d }) => d.needsAuthorization)
    .map(({ d }) => ({ prefix: exposedToolName(d.name, ''), integrationName: d.name }));
  const snapshot = { integrations: kept.map(({ d }) => d) };
  return { mcpRoutes, integrationCount: kept.length, pinned: [], snapshot, integrations: found, unauthorized };
}

export function createDiscoveryActivities({ db, logger, mcpPool }: ActivityDeps) {
  return {
    /**
     * Discovery of one pinned integration, on a worker of its task queue (the only kind that can
     * start its server). Adds the integration to the run's discovery snapshot.
     */
    async discoverPinnedIntegration(
      { runId, integrationId }: { runId: string; integrationId: string },
    ): Promise<Record<string, McpToolRoute>> {
      const integration = await findIntegration(db, integrationId);
      if (!integration) return {};
      const d = await discoverIntegration(mcpPool, integration, logger, DISCOVERY_TIMEOUT_MS);
      const exposedToolNames = assignExposedNames(d.tools.map((t) => ({ integrationName: d.name, toolName: t.name })));
      await updateSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery, (snapshot) => ({
        integrations: [...(snapshot?.integrations ?? []).filter((i) => i.id !== d.id), { ...d, exposedToolNames }],
      }));
      const { taskQueue } = integration;
      logger.info({ runId, integrationId, taskQueue, tools: d.tools.length, status: d.status }, 'pinned MCP discovery done');
      return routesOf(integration, d, exposedToolNames);
    },

    /**
     * GET /v1/integrations/:id/capabilities: connects (through the worker's pool, so a later run
     * reuses the connection) and lists one integration. A disabled integration is listed too: an
     * operator may want to look before enabling it.
     */
    async listIntegrationCapabilities({ integrationId }: { integrationId: string }): Promise<DiscoveredIntegration> {
      const integration = await findIntegration(db, integrationId);
      if (!integration) throw ApplicationFailure.nonRetryable(`Integration ${integrationId} does not exist`, 'IntegrationNotFound');
      return discoverIntegration(mcpPool, integration, logger, LISTING_TIMEOUT_MS);
    },
  };
}
