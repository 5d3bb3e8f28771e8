import path from 'node:path';
import { buildApp, type AppDeps } from '../../api/app';
import type { ActivityDeps } from '../../activities/deps';
import { eraProbeStore } from '../../store/integrations/era-probes';
import { createPool } from '../../store/pool';
import { createEngineWorker } from '../../worker/create-worker';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { logger, type BenchInfra } from './bench-stack';

/**
 * The engine on a bench's servers: its worker (workflows, activities, MCP pool) in this process on
 * `taskQueue`, and the API listening on loopback with a pool of its own (what reaches the worker
 * goes through Temporal or PostgreSQL, as between processes), with `app`'s keys. Both stop with the infra.
 */
export async function startWorkerAndApi(
  infra: BenchInfra, taskQueue: string, deps: Pick<ActivityDeps, 'providers' | 'runChanges'>, app: BenchApiOptions = {},
): Promise<{ apiUrl: string }> {
  const mcpPool = await startMcpPool(logger, {
    groupsDir: path.join(infra.tmpDir, 'mcp-groups'), eras: eraProbeStore(infra.db),
    // The bench's servers listen on loopback, as under `npm start` without keys.
    network: { blockPrivateNetworks: false, privateNetworksForAll: true },
  });
  infra.onClose(() => mcpPool.closeAll());
  const worker = await createEngineWorker({
    connection: infra.env.nativeConnection, namespace: 'default', taskQueue, deps: { db: infra.db, logger, mcpPool, ...deps },
  });
  const running = worker.run();
  infra.onClose(async () => {
    worker.shutdown();
    await running;
  });
  return startBenchApi(infra, taskQueue, app);
}

/** What a bench may set of the API it starts (its keys). */
export type BenchApiOptions = Pick<AppDeps, 'apiKey' | 'adminApiKey'>;

/** The API alone on a bench's servers, listening on loopback with a pool of its own; it stops with the infra. */
export async function startBenchApi(infra: BenchInfra, taskQueue: string, options: BenchApiOptions = {}): Promise<{ apiUrl: string }> {
  const apiDb = createPool(infra.databaseUrl, logger);
  infra.onClose(() => apiDb.end());
  // The bench is the API's only caller: no rate limit.
  const app = await buildApp({ db: apiDb, client: infra.client, taskQueue, logger, rateLimitPerMinute: 0, ...options });
  infra.onClose(() => app.close());
  return { apiUrl: await app.listen({ host: '127.0.0.1', port: 0 }) };
}
