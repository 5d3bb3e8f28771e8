import fs from 'node:fs';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Integration } from '../../core/integration';
import { loadConfig } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { lowerPriority } from '../../platform/processes';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { createPool } from '../../store/pool';
import { createBenchActivities } from './bench-stack';
import { createFloorTables, floorRecords } from './floor-records';

/**
 * The floor's worker process for `npm run bench:load`, beside the engine's: the floor workflows
 * and their activities (the MCP call through one pooled client), with the SDK's default options,
 * at the engine worker's priority.
 * Arguments: <temporal address> <task queue> <workflow bundle path> <integration JSON file> <MCP groups dir> [database URL].
 * With a database URL, the floor with a database of record (floor-records.ts). It stops on SIGTERM.
 */
async function main(): Promise<void> {
  const [address, taskQueue, bundlePath, integrationFile, groupsDir, databaseUrl] = process.argv.slice(2);
  if (!groupsDir) throw new Error('usage: floor-worker <address> <task queue> <bundle> <integration.json> <groups dir> [database URL]');
  Runtime.install({ shutdownSignals: [], logger: new DefaultLogger('WARN') });
  const logger = createLogger('warn', 'floor-worker');
  // At the engine worker's priority (WORKER_NICE), as the engine's worker runs beside it.
  lowerPriority(loadConfig().workerNice, logger);
  const integration = JSON.parse(fs.readFileSync(integrationFile, 'utf8')) as Integration;
  const connection = await NativeConnection.connect({ address });
  const mcpPool = await startMcpPool(logger, { groupsDir });
  // The engine worker's pool, as the engine's worker makes it (createPool: 10 connections, prepared statements planned once).
  const db = databaseUrl ? createPool(databaseUrl, logger) : undefined;
  try {
    if (db) await createFloorTables(db);
    const worker = await Worker.create({
      connection, namespace: 'default', taskQueue, workflowBundle: { codePath: bundlePath },
      activities: createBenchActivities(mcpPool, { integration }, db && floorRecords(db)),
    });
    process.once('SIGTERM', () => worker.shutdown());
    await worker.run();
  } finally {
    await mcpPool.closeAll();
    await db?.end();
    await connection.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`floor worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
