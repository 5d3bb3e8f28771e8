import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { startApiServer } from '../api/server';
import { ConfigError, loadConfig } from '../core/config';
import { startEmbeddedPostgres } from '../core/db/embedded-postgres';
import { migrate } from '../core/db/migrations';
import { createPool } from '../core/db/pool';
import { createProviders } from '../core/llm/providers';
import { initTracing } from '../core/tracing/setup';
import { createLogger } from '../core/logger';
import { resolveTemporalCli } from '../core/temporal/cli';
import { freePort } from '../core/ports';
import { startDevServer } from '../core/temporal/dev-server';
import { createEngineWorker } from './create-worker';
import { startMcpPool } from './mcp-lifecycle';
import { runDemo } from './demo';

/**
 * `npm start`: the whole engine on embedded defaults, in one process. Brings up the Temporal
 * dev server and PostgreSQL (both kept in DATA_DIR), a worker and the API, then runs the demo.
 * Ctrl-C stops everything in reverse order.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'engine');
  const say = (line: string) => process.stdout.write(`${line}\n`);
  Runtime.install({
    // We own the shutdown order (worker before connections and databases); the runtime must not act on signals.
    shutdownSignals: [],
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
  });

  const stops: (() => Promise<unknown>)[] = [];
  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= (async () => {
      say('\nshutting down…');
      for (const stop of stops.reverse()) await stop().catch((err: unknown) => logger.error({ err }, 'shutdown step failed'));
      say('stopped.');
      // Everything this process started is closed above; the native runtime alone may linger.
      process.exit();
    })();
    return stopping;
  };
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());

  try {
    say(`data dir: ${config.dataDir}`);
    const [temporal, postgres] = await Promise.all([
      config.temporalAddress ? undefined : startDevServer({
        cliPath: await resolveTemporalCli({ cliPath: config.temporalCliPath, logger, onBuild: say }), dataDir: path.join(config.dataDir, 'temporal'), namespace: config.temporalNamespace,
        preferredPort: 7233, preferredUiPort: config.temporalUiPort, retention: config.temporalRetention, logger,
      }),
      config.databaseUrl ? undefined : freePort().then((port) => startEmbeddedPostgres({ dataDir: config.dataDir, port, logger })),
    ]);
    if (temporal) stops.push(temporal.stop);
    if (postgres) stops.push(postgres.stop);
    const temporalAddress = config.temporalAddress ?? temporal!.address;

    const db = createPool(config.databaseUrl ?? postgres!.url, logger);
    stops.push(() => db.end());
    await migrate(db);

    say('bundling workflows and starting the worker…');
    const nativeConnection = await NativeConnection.connect({ ...config.temporalConnect.connectionOptions, address: temporalAddress });
    stops.push(() => nativeConnection.close());
    const mcpPool = await startMcpPool(logger);
    // Stops run in reverse: the pool closes after the worker below has stopped.
    stops.push(() => mcpPool.closeAll());
    // Flushed after the worker has stopped: its last activities may still be emitting observations.
    const tracing = initTracing(config.langfuse, logger);
    stops.push(() => tracing.shutdown());
    const worker = await createEngineWorker({
      connection: nativeConnection, namespace: config.temporalNamespace, taskQueue: config.taskQueue,
      deps: { db, logger, providers: createProviders({ readApiKey: config.readSecret, logger }), mcpPool }, workflowBundlePath: config.workflowBundlePath,
    });
    const running = worker.run();
    stops.push(async () => {
      worker.shutdown();
      await running;
    });

    const connection = await Connection.connect({ ...config.temporalConnect.connectionOptions, address: temporalAddress });
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: config.temporalNamespace });
    const api = await startApiServer(config, { db, client, logger });
    stops.push(api.close);

    say('');
    say(`API:              ${api.url}  (OpenAPI: ${api.url}/docs)`);
    if (temporal) say(`Temporal Web UI:  ${temporal.uiUrl}/namespaces/${config.temporalNamespace}/workflows`);
    say(`Temporal server:  ${temporalAddress}`);
    say('');
    await runDemo(api.url, say, config.apiKey);
    say('');
    say('The engine is running. Press Ctrl-C to stop.');
  } catch (err) {
    if (!stopping) {
      process.stderr.write(`${err instanceof ConfigError ? err.message : err instanceof Error ? err.stack : String(err)}\n`);
      process.exitCode = 1;
      await shutdown();
    }
  }
}

void main();
