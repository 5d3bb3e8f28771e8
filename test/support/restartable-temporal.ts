import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppDeps } from '../../api/app';
import { freePort } from '../../platform/ports';
import { startDevServer, type DevServer } from '../../platform/temporal/dev-server';
import { createPool, type Db } from '../../store/pool';
import { logger } from './engine';
import { exited, spawnWorker } from './processes';
import { testStack } from './stack-env';

/**
 * A Temporal dev server of its own (persisted in a file, so that the suites sharing the global one
 * are not disturbed), the API in this process and a worker process, both on it. `restart()` stops
 * the server and starts it again on the same port and database file: every process finds it where
 * it was. Call inside a describe: it registers the beforeAll and afterAll that start and stop it all.
 */
export function restartableTemporal(name: string, extra: { workerEnv?: Record<string, string>; app?: Partial<AppDeps> } = {}) {
  const h = {
    taskQueue: `${name}-${Math.random().toString(36).slice(2, 10)}`,
    server: undefined as DevServer | undefined,
    options: undefined as unknown as Parameters<typeof startDevServer>[0],
    connection: undefined as Connection | undefined,
    db: undefined as unknown as Db,
    app: undefined as unknown as FastifyInstance,
    worker: undefined as ChildProcess | undefined,
    /** stops the server and starts it again; returns the address it had, which it has again */
    async restart(): Promise<{ before: string; after: string }> {
      const before = h.server!.address;
      await h.server!.stop();
      h.server = await startDevServer(h.options);
      return { before, after: h.server.address };
    },
    /**
     * A crash of every process: the worker and the Temporal server are killed (SIGKILL), the API
     * (in this process) drops its connections; then all start again on the same port and files.
     */
    async crashAll(): Promise<void> {
      if (h.worker) {
        h.worker.kill('SIGKILL');
        await exited(h.worker);
      }
      const pid = Number(await fs.readFile(path.join(h.options.dataDir, 'temporal.pid'), 'utf8'));
      process.kill(-pid, 'SIGKILL');
      await stopApiAndServer();
      await startAll();
    },
    /** the whole engine: the worker, the API and the Temporal server stop (the worker as a deploy stops it), then all start again */
    async restartAll(): Promise<void> {
      h.worker?.kill('SIGTERM');
      if (h.worker) await exited(h.worker);
      await stopApiAndServer();
      await startAll();
    },
  };
  const startAll = async () => {
    h.server = await startDevServer(h.options);
    h.connection = await Connection.connect({ address: h.server.address });
    h.db = createPool(testStack().databases.embedded, logger);
    h.app = await buildApp({
      db: h.db, client: new Client({ connection: h.connection }), taskQueue: h.taskQueue, logger, rateLimitPerMinute: 0, ...extra.app,
    });
    h.worker = spawnWorker({
      DATABASE_URL: testStack().databases.embedded, TASK_QUEUE: h.taskQueue, TEMPORAL_ADDRESS: h.server.address, SECRETS_KEY: testStack().secretsKey,
      ...extra.workerEnv,
    });
  };
  const stopApiAndServer = async () => {
    await h.app?.close();
    await h.connection?.close();
    await h.server?.stop();
    await h.db?.end();
  };
  beforeAll(async () => {
    h.options = {
      cliPath: testStack().temporalCliPath, dataDir: path.join(testStack().tmpDir, `temporal-${h.taskQueue}`), namespace: 'default',
      port: { preferred: await freePort() }, uiPort: { preferred: await freePort() }, retention: '1d', logger, nice: 7,
    };
    await startAll();
  }, 120_000);
  afterAll(async () => {
    const { worker } = h;
    if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    if (worker) await exited(worker);
    await stopApiAndServer();
  });
  return h;
}
