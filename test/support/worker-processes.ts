import type { ChildProcess } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { logger, startEngine, type Engine } from './engine';
import { exited, spawnWorker } from './processes';
import { testStack } from './stack-env';

/**
 * The API in this process and workers in processes of their own, each one a `npm run worker` that
 * a test may SIGKILL. Call inside a describe: it registers the beforeAll and afterAll that start and
 * stop them (workers still running are killed). `engine` and `app` are set once beforeAll has run.
 */
export function workerProcesses() {
  const workers: ChildProcess[] = [];
  const h = {
    engine: undefined as unknown as Engine,
    app: undefined as unknown as FastifyInstance,
    /** a new worker process on the engine's task queue */
    worker(): ChildProcess {
      const child = spawnWorker({ DATABASE_URL: testStack().databases.embedded, TASK_QUEUE: h.engine.taskQueue, SECRETS_KEY: testStack().secretsKey });
      workers.push(child);
      return child;
    },
  };
  beforeAll(async () => {
    h.engine = await startEngine('embedded', { worker: false });
    h.app = await buildApp({ db: h.engine.db, client: h.engine.client, taskQueue: h.engine.taskQueue, logger, rateLimitPerMinute: 0 });
  });
  afterAll(async () => {
    for (const w of workers) {
      if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
      await exited(w);
    }
    await h.app?.close();
    await h.engine?.close();
  });
  return h;
}
