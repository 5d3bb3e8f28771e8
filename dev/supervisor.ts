import { Client } from '@temporalio/client';
import { startApiServer, type ApiServer } from '../api/server';
import { checkApiExposure, ConfigError, everyCallerIsOperator, loadConfig, type AppConfig } from '../platform/config';
import { DataDirBusyError, lockDataDir, type DataDirLock } from '../platform/data-dir-lock';
import { migrate } from '../store/migrations';
import { createPool, type Db } from '../store/pool';
import { loadOrCreateKeyFile } from '../platform/secrets/key-file';
import { openSecretStore } from '../store/secrets/open-secret-store';
import { removeEngineState, writeEngineState } from '../platform/engine-state';
import { createLogger, type Logger } from '../platform/logger';
import { connectTemporal, installTemporalRuntime } from '../platform/temporal/native-connection';
import { createEngineWorker } from '../worker/create-worker';
import { runDemo } from './demo';
import { openWorkerDeps } from '../worker/worker-deps';
import { workflowCode, type WorkflowCode } from '../worker/versioning';
import { makeBuildCurrent } from '../platform/temporal/deployments';
import { buildConsole, consoleIsStale, consoleSourceDir } from '../console/build';
import { Shutdown } from './shutdown';
import { startDevServices, type DevServices } from './services';
import { startMetricsServer } from '../platform/metrics/metrics-server';
import { startOtlpMetricsExport } from '../platform/metrics/otlp-export';
import { relayedMetrics, temporalMetricsExport, type TemporalMetricsExport } from '../platform/temporal/runtime-metrics';

/** The Worker Deployment of `npm start`'s worker, unless WORKER_DEPLOYMENT_NAME names another. */
const DEV_DEPLOYMENT = 'agent-engine';

const say = (line: string) => process.stdout.write(`${line}\n`);

/** Where the services answer: started by this process or named by the config. */
interface Services { started: DevServices; databaseUrl: string; temporalAddress: string }

/**
 * `npm start`: the whole engine on embedded defaults, in one process. Brings up the Temporal
 * dev server and PostgreSQL (both kept in DATA_DIR), a worker and the API, then runs the demo.
 * Ctrl-C stops everything in reverse order, including services still starting.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  checkApiExposure(config);
  const logger = createLogger(config.logLevel, 'engine');
  // The SDK's own metrics: served (relayed on a free port, printed), or sent by OTLP when configured.
  const temporalMetrics = await temporalMetricsExport(config.metrics, true);
  installTemporalRuntime('WARN', temporalMetrics?.exporter);
  const lock = await lockOrExit(config.dataDir);
  const shutdown = new Shutdown(logger, say);
  shutdown.onStop('data dir lock', () => lock.release());
  process.on('SIGINT', () => void shutdown.run());
  process.on('SIGTERM', () => void shutdown.run());
  try {
    await new Supervisor(config, logger, lock, shutdown, temporalMetrics).start();
  } catch (err) {
    if (!shutdown.begun) {
      process.stderr.write(`${describeFailure(err)}\n`);
      process.exitCode = 1;
      await shutdown.run();
    }
  }
}

/** Another engine owns the data dir: touch nothing of it. */
async function lockOrExit(dataDir: string): Promise<DataDirLock> {
  try {
    return await lockDataDir(dataDir);
  } catch (err) {
    process.stderr.write(`${err instanceof DataDirBusyError ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

/** `npm start`'s phases in order; each thing started is handed to the shutdown before the next phase. */
class Supervisor {
  private workerMetricsUrl: string | undefined;
  private temporalMetricsUrl: string | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly logger: Logger,
    private readonly lock: DataDirLock,
    private readonly shutdown: Shutdown,
    private readonly temporalMetrics: TemporalMetricsExport | undefined,
  ) {}

  async start(): Promise<void> {
    say(`data dir: ${this.config.dataDir}`);
    await this.buildConsoleIfStale();
    const started = await this.startServices();
    if (this.shutdown.signal.aborted) return;
    const services: Services = {
      started,
      temporalAddress: this.config.temporalAddress ?? started.temporal!.address,
      databaseUrl: this.config.databaseUrl ?? started.postgres!.url,
    };
    const db = await this.openDatabase(services.databaseUrl);
    say('bundling workflows and starting the worker…');
    const client = await this.startWorker(db, services.temporalAddress);
    const api = await this.startApi(db, client, services);
    this.printAddresses(services, api);
    await runDemo(api.url, say, { apiKey: this.config.apiKey, signal: this.shutdown.signal });
    if (this.shutdown.signal.aborted) return;
    say('');
    say('The engine is running. Press Ctrl-C to stop.');
  }

  /** A fresh clone has no console build, and a pulled change makes it stale: built before the API serves it. */
  private async buildConsoleIfStale(): Promise<void> {
    const consoleDir = consoleSourceDir();
    if (!(await consoleIsStale(consoleDir))) return;
    say('building the console…');
    await buildConsole(consoleDir);
  }

  private async startServices(): Promise<DevServices> {
    const starting = startDevServices(this.config, this.logger, say, this.shutdown.signal);
    this.shutdown.whileStarting(starting);
    const services = await starting;
    // Independent of each other: stopped side by side, after everything that uses them.
    this.shutdown.onStop('Temporal dev server and PostgreSQL', () => Promise.all([services.temporal?.stop(), services.postgres?.stop()]));
    if (services.failed) throw services.failed.reason;
    return services;
  }

  /** Migrated, with the secret store open. */
  private async openDatabase(url: string): Promise<Db> {
    const db = createPool(url, this.logger);
    this.shutdown.onStop('database pool', () => db.end());
    await migrate(db);
    // Secrets at rest: SECRETS_KEY when set, else a key kept in the data dir, made on the first start.
    const { secretKeys } = this.config;
    const keyFile = secretKeys.current ? undefined : await loadOrCreateKeyFile(this.config.dataDir);
    if (keyFile?.created) say(`created the secrets key: ${keyFile.file} (keep it: it opens the stored integration secrets)`);
    await openSecretStore(db, { current: secretKeys.current ?? keyFile?.key, previous: secretKeys.previous }, this.logger);
    return db;
  }

  /** The worker, polling, with its build current; returns the client the API starts runs with. */
  private async startWorker(db: Db, temporalAddress: string): Promise<Client> {
    const { config } = this;
    // One connection for the worker and the API's client; closed after both have stopped.
    const connection = await connectTemporal(config, temporalAddress);
    this.shutdown.onStop('Temporal connection', () => connection.close());
    // Where every caller of this API is the operator, any integration may reach private networks, as they could all flag it.
    const network = { ...config.networkPolicy, privateNetworksForAll: everyCallerIsOperator(config) };
    // Each of the two processes npm start stands for serves its own metrics, on a free port (METRICS_PORT is for one process).
    const workerDeps = await openWorkerDeps(config, db, this.logger, { network, metrics: true });
    // Stops run in reverse: the MCP servers, tracing and the listener close after the worker below has stopped.
    this.shutdown.onStop('worker dependencies', workerDeps.close);
    if (workerDeps.metrics) {
      const metricsServer = await startMetricsServer({ ...config.metrics, port: 0, registry: workerDeps.metrics.registry });
      this.shutdown.onStop('worker metrics', metricsServer.close);
      this.workerMetricsUrl = metricsServer.url;
      // Sent by OTLP too when configured, its last export once the worker has stopped (stops run in reverse).
      const otlp = config.metrics.otlp && startOtlpMetricsExport(config.metrics.otlp, workerDeps.metrics.registry, this.logger);
      if (otlp) this.shutdown.onStop('worker metrics by OTLP', otlp.shutdown);
    }
    await this.serveTemporalMetrics();
    // Versioned, as a deploy is (worker/versioning.ts): its build is made current once its worker polls.
    const code = await workflowCode({
      deployment: config.workerDeployment ?? { name: DEV_DEPLOYMENT }, workflowBundlePath: config.workflowBundlePath,
    });
    const worker = await createEngineWorker({
      connection, namespace: config.temporalNamespace, taskQueue: config.taskQueue,
      deps: workerDeps.deps, code, toolSlots: config.toolCallSlots,
      // Within Ctrl-C's 15 s; an activity cut short is retried under its policy once a worker polls again.
      shutdown: { grace: '2s', force: '4s' },
    });
    const running = worker.run();
    this.shutdown.onStop('worker', async () => {
      worker.shutdown();
      await running;
    });
    const client = new Client({ connection, namespace: config.temporalNamespace });
    await this.makeCurrent(client, code);
    return client;
  }

  /** The Temporal SDK's metrics, relayed on a free port like the worker's (unless they go by OTLP). */
  private async serveTemporalMetrics(): Promise<void> {
    const sdkUrl = this.temporalMetrics?.sdkUrl;
    if (!sdkUrl) return;
    const server = await startMetricsServer({ ...this.config.metrics, port: 0, registry: relayedMetrics(sdkUrl) });
    this.shutdown.onStop('Temporal SDK metrics', server.close);
    this.temporalMetricsUrl = server.url;
  }

  /** Before the API takes runs: a run started with no current build would wait for an unversioned worker. */
  private makeCurrent(client: Client, code: WorkflowCode): Promise<unknown> {
    return makeBuildCurrent(client, code.version!, { signal: this.shutdown.signal });
  }

  /** The API, and the engine state file through which `agent-engine mcp` finds it. */
  private async startApi(db: Db, client: Client, { started, databaseUrl, temporalAddress }: Services): Promise<ApiServer> {
    const { config } = this;
    const temporalUiUrl = config.temporalUiUrl ?? started.temporal?.uiUrl;
    const api = await startApiServer(config, { db, client, logger: this.logger, temporalUiUrl, metricsPort: 0 });
    this.shutdown.onStop('API', api.close);
    await this.lock.setUrl(api.url);
    // `agent-engine mcp` finds this engine through the data dir (ports and password change every start).
    await writeEngineState(config.dataDir, {
      pid: process.pid, apiUrl: api.url, databaseUrl, temporalAddress,
      temporalNamespace: config.temporalNamespace, taskQueue: config.taskQueue, startedAt: new Date().toISOString(),
    });
    this.shutdown.onStop('engine state file', () => removeEngineState(config.dataDir));
    return api;
  }

  private printAddresses({ started, databaseUrl, temporalAddress }: Services, api: ApiServer): void {
    say('');
    say(`Console:          ${api.url}/console`);
    say(`API:              ${api.url}  (OpenAPI: ${api.url}/docs)`);
    if (started.temporal) say(`Temporal Web UI:  ${started.temporal.uiUrl}/namespaces/${this.config.temporalNamespace}/workflows`);
    say(`Temporal server:  ${temporalAddress}`);
    say(`PostgreSQL:       ${withoutPassword(databaseUrl)}`);
    if (api.metricsUrl) say(`Metrics (API):    ${api.metricsUrl}`);
    if (this.workerMetricsUrl) say(`Metrics (worker): ${this.workerMetricsUrl}`);
    if (this.temporalMetricsUrl) say(`Metrics (Temporal SDK): ${this.temporalMetricsUrl}`);
    say('');
  }
}

/** A database URL as it may be shown: its password stays in the data dir (or the operator's DATABASE_URL). */
function withoutPassword(url: string): string {
  const shown = new URL(url);
  shown.password = '';
  return shown.toString();
}

function describeFailure(err: unknown): string {
  return err instanceof ConfigError ? err.message : err instanceof Error ? String(err.stack) : String(err);
}

main().catch((err: unknown) => {
  // Configuration refused before anything started (bad values, an exposed API without a key).
  process.stderr.write(`${describeFailure(err)}\n`);
  process.exit(1);
});
