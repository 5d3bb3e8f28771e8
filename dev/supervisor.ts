import path from 'node:path';
import { Client } from '@temporalio/client';
import { startApiServer } from '../api/server';
import { checkApiExposure, ConfigError, everyCallerIsOperator, loadConfig } from '../platform/config';
import { DataDirBusyError, lockDataDir } from '../platform/data-dir-lock';
import { startEmbeddedPostgres } from '../store/embedded-postgres';
import { migrate } from '../store/migrations';
import { createPool } from '../store/pool';
import { loadOrCreateKeyFile } from '../platform/secrets/key-file';
import { openSecretStore } from '../store/secrets/open-secret-store';
import { removeEngineState, writeEngineState } from '../platform/engine-state';
import { createLogger } from '../platform/logger';
import { resolveTemporalCli } from '../platform/temporal/cli';
import { freePort, pickPort } from '../platform/ports';
import { startDevServer } from '../platform/temporal/dev-server';
import { connectTemporal, installTemporalRuntime } from '../platform/temporal/native-connection';
import { createEngineWorker } from '../worker/create-worker';
import { runDemo } from './demo';
import { openWorkerDeps } from '../worker/worker-deps';
import { workflowCode } from '../worker/versioning';
import { makeBuildCurrent } from '../platform/temporal/deployments';
import { buildConsole, consoleIsStale, consoleSourceDir } from '../console/build';

/** The Worker Deployment of `npm start`'s worker, unless WORKER_DEPLOYMENT_NAME names another. */
const DEV_DEPLOYMENT = 'agent-engine';

/** Ctrl-C must end `npm start` promptly in any phase; a step that overruns its own bound is given up on. */
const SHUTDOWN_DEADLINE_MS = 14_000;

/**
 * `npm start`: the whole engine on embedded defaults, in one process. Brings up the Temporal
 * dev server and PostgreSQL (both kept in DATA_DIR), a worker and the API, then runs the demo.
 * Ctrl-C stops everything in reverse order, including services still starting.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  checkApiExposure(config);
  const logger = createLogger(config.logLevel, 'engine');
  const say = (line: string) => process.stdout.write(`${line}\n`);
  installTemporalRuntime();

  let lock: Awaited<ReturnType<typeof lockDataDir>>;
  try {
    lock = await lockDataDir(config.dataDir);
  } catch (err) {
    // Another engine owns the data dir: touch nothing of it.
    process.stderr.write(`${err instanceof DataDirBusyError ? err.message : String(err)}\n`);
    process.exit(1);
  }

  const stops: { name: string; stop: () => Promise<unknown> }[] = [{ name: 'data dir lock', stop: () => lock.release() }];
  const onStop = (name: string, stop: () => Promise<unknown>) => stops.push({ name, stop });
  // Services still starting when Ctrl-C comes stop themselves and settle this before the stops run.
  const starting = new AbortController();
  let services: Promise<unknown> = Promise.resolve();
  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= (async () => {
      say('\nshutting down…');
      setTimeout(() => {
        say('stopped (some steps did not finish in time; a next start cleans up what they left).');
        process.exit(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
      starting.abort();
      await services.catch(() => undefined);
      for (const { name, stop } of stops.reverse()) {
        const began = Date.now();
        await stop().catch((err: unknown) => logger.error({ err, step: name }, 'shutdown step failed'));
        if (Date.now() - began > 3_000) logger.warn({ step: name, ms: Date.now() - began }, 'shutdown step was slow');
      }
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
    // A fresh clone has no console build, and a pulled change makes it stale: built before the API serves it.
    const consoleDir = consoleSourceDir();
    if (await consoleIsStale(consoleDir)) {
      say('building the console…');
      await buildConsole(consoleDir);
    }
    const { signal } = starting;
    const started = Promise.allSettled([
      config.temporalAddress ? undefined : resolveTemporalCli({ cliPath: config.temporalCliPath, logger, onBuild: say, signal }).then((cliPath) => startDevServer({
        cliPath, dataDir: path.join(config.dataDir, 'temporal'), namespace: config.temporalNamespace,
        port: config.temporalPort ? { set: config.temporalPort, setting: 'TEMPORAL_PORT' } : { preferred: 7233 },
        uiPort: config.temporalUiPort ? { set: config.temporalUiPort, setting: 'TEMPORAL_UI_PORT' } : { preferred: 8233 },
        retention: config.temporalRetention, logger, signal,
        // Runs' execution yields to this process, which answers the API's requests.
        nice: config.workerNice,
      })),
      config.databaseUrl ? undefined : (config.postgresPort ? pickPort({ set: config.postgresPort, setting: 'POSTGRES_PORT' }) : freePort())
        .then((port) => startEmbeddedPostgres({ dataDir: config.dataDir, port, logger, signal })),
    ]);
    services = started;
    // Each service that came up is stopped on the way out, even when the other failed.
    const [temporalOutcome, postgresOutcome] = await started;
    const temporal = temporalOutcome.status === 'fulfilled' ? temporalOutcome.value : undefined;
    const postgres = postgresOutcome.status === 'fulfilled' ? postgresOutcome.value : undefined;
    // Independent of each other: stopped side by side, after everything that uses them.
    onStop('Temporal dev server and PostgreSQL', () => Promise.all([temporal?.stop(), postgres?.stop()]));
    for (const outcome of [temporalOutcome, postgresOutcome]) if (outcome.status === 'rejected') throw outcome.reason;
    if (signal.aborted) return;
    const temporalAddress = config.temporalAddress ?? temporal!.address;

    const db = createPool(config.databaseUrl ?? postgres!.url, logger);
    onStop('database pool', () => db.end());
    await migrate(db);
    // Secrets at rest: SECRETS_KEY when set, else a key kept in the data dir, made on the first start.
    const keyFile = config.secretKeys.current ? undefined : await loadOrCreateKeyFile(config.dataDir);
    if (keyFile?.created) say(`created the secrets key: ${keyFile.file} (keep it: it opens the stored integration secrets)`);
    await openSecretStore(db, { current: config.secretKeys.current ?? keyFile?.key, previous: config.secretKeys.previous }, logger);

    say('bundling workflows and starting the worker…');
    // One connection for the worker and the API's client; closed after both have stopped.
    const connection = await connectTemporal(config, temporalAddress);
    onStop('Temporal connection', () => connection.close());
    // Where every caller of this API is the operator, any integration may reach private networks, as they could all flag it.
    const network = { ...config.networkPolicy, privateNetworksForAll: everyCallerIsOperator(config) };
    const workerDeps = await openWorkerDeps(config, db, logger, network);
    // Stops run in reverse: the MCP servers, tracing and the listener close after the worker below has stopped.
    onStop('worker dependencies', workerDeps.close);
    // Versioned, as a deploy is (worker/versioning.ts): its build is made current once its worker polls.
    const code = await workflowCode({ deployment: config.workerDeployment ?? { name: DEV_DEPLOYMENT }, workflowBundlePath: config.workflowBundlePath });
    const worker = await createEngineWorker({
      connection, namespace: config.temporalNamespace, taskQueue: config.taskQueue,
      deps: workerDeps.deps, code, toolSlots: config.toolCallSlots,
      // Within Ctrl-C's 15 s; an activity cut short is retried under its policy once a worker polls again.
      shutdown: { grace: '2s', force: '4s' },
    });
    const running = worker.run();
    onStop('worker', async () => {
      worker.shutdown();
      await running;
    });

    const client = new Client({ connection, namespace: config.temporalNamespace });
    // Before the API takes runs: a run started with no current build would wait for an unversioned worker.
    await makeBuildCurrent(client, code.version!, { signal });
    const temporalUiUrl = config.temporalUiUrl ?? temporal?.uiUrl;
    const api = await startApiServer(config, { db, client, logger, temporalUiUrl });
    onStop('API', api.close);
    await lock.setUrl(api.url);
    // `agent-engine mcp` finds this engine through the data dir (ports and password change every start).
    await writeEngineState(config.dataDir, {
      pid: process.pid, apiUrl: api.url, databaseUrl: config.databaseUrl ?? postgres!.url, temporalAddress,
      temporalNamespace: config.temporalNamespace, taskQueue: config.taskQueue, startedAt: new Date().toISOString(),
    });
    onStop('engine state file', () => removeEngineState(config.dataDir));

    say('');
    say(`Console:          ${api.url}/console`);
    say(`API:              ${api.url}  (OpenAPI: ${api.url}/docs)`);
    if (temporal) say(`Temporal Web UI:  ${temporal.uiUrl}/namespaces/${config.temporalNamespace}/workflows`);
    say(`Temporal server:  ${temporalAddress}`);
    say(`PostgreSQL:       ${withoutPassword(config.databaseUrl ?? postgres!.url)}`);
    say('');
    await runDemo(api.url, say, { apiKey: config.apiKey, signal });
    if (signal.aborted) return;
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

/** A database URL as it may be shown: its password stays in the data dir (or the operator's DATABASE_URL). */
function withoutPassword(url: string): string {
  const shown = new URL(url);
  shown.password = '';
  return shown.toString();
}

main().catch((err: unknown) => {
  // Configuration refused before anything started (bad values, an exposed API without a key).
  process.stderr.write(`${err instanceof ConfigError ? err.message : err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
