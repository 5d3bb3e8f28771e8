import type { ActivityDeps } from '../activities';
import { createProviders } from '../llm/providers';
import type { AppConfig } from '../platform/config';
import type { Logger } from '../platform/logger';
import type { NetworkPolicy } from '../platform/net/address-guard';
import { initTracing } from '../platform/tracing/setup';
import { oauthRecords } from '../store/integrations/oauth';
import { eraProbeStore } from '../store/integrations/era-probes';
import type { Db } from '../store/pool';
import { listenForAnswers } from '../store/runs/change-feed';
import { startMcpPool } from './mcp-lifecycle';
import { TenantSlotCaps, ToolSlots } from '../activities/tool-slots';
import { readPriceTable } from '../platform/prices-file';
import { WorkerMetrics } from '../platform/metrics/worker-metrics';

export interface WorkerDeps {
  deps: ActivityDeps;
  /** the process's Prometheus metrics, which its activities record; served by the composition root; absent when none are served */
  metrics?: WorkerMetrics;
  /** after the worker has stopped: its last activities may still call MCP tools and emit observations */
  close(): Promise<void>;
}

/**
 * What a worker's activities need, built the same way by every composition root (`npm run worker`,
 * `npm start`): the LLM providers, the MCP pool (with the database's OAuth records and negotiated
 * protocol eras), tracing, and the LISTEN connection that wakes tool calls waiting for answers to MCP
 * servers' questions.
 */
export async function openWorkerDeps(
  config: AppConfig, db: Db, logger: Logger, options: { network?: NetworkPolicy; metrics?: boolean } = {},
): Promise<WorkerDeps> {
  const network = options.network ?? config.networkPolicy;
  // First: a bad price table stops the start before anything is opened.
  const prices = config.pricesFile ? await readPriceTable(config.pricesFile) : undefined;
  const mcpPool = await startMcpPool(logger, {
    groupsDir: config.mcpGroupsDir, network, oauth: { records: oauthRecords(db), logger }, eras: eraProbeStore(db),
  });
  const tracing = initTracing(config.langfuse, logger);
  const runChanges = listenForAnswers(db, logger);
  const providers = createProviders({
    readApiKey: config.readSecret, allowedKeyEnvs: config.llmKeyEnvs, logger, networkPolicy: config.networkPolicy,
    answerBounds: config.llmAnswerBounds,
  });
  // Metrics no one can scrape are not recorded: `npm run worker` records them when METRICS_PORT is set (npm start always serves them).
  const metrics = (options.metrics ?? (config.metrics.port !== undefined || config.metrics.otlp !== undefined))
    ? new WorkerMetrics({ maxLabelValues: config.metrics.maxLabelValues, mcpConnections: () => mcpPool.openConnections() })
    : undefined;
  return {
    metrics,
    // One count of each integration's calls for the whole process: its engine worker and its pinned queues' alike.
    deps: {
      db, logger, providers, mcpPool, runChanges, toolSlots: new ToolSlots(new TenantSlotCaps(db)),
      ...(metrics ? { metrics } : {}), ...(prices ? { prices } : {}),
    },
    async close() {
      await mcpPool.closeAll();
      await runChanges.close();
      await tracing.shutdown();
    },
  };
}
