import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { inspect } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import type { Agent } from '../../core/agent';
import { createPool, type Db } from '../../store/pool';
import { listenForAnswers, type RunChangeFeed } from '../../store/runs/change-feed';
import { findRunResult, type RunResult } from '../../store/runs/results';
import { insertThread } from '../../store/threads/threads';
import { createScriptedProvider } from '../../llm/scripted';
import type { LlmProviders } from '../../llm/types';
import { installSecretKeys } from '../../platform/secrets/key-ring';
import type { SourceQueryOptions } from '../../sources/query/source-query';
import { keyRing } from '../../platform/secrets/secret-box';
import { startRun, type StartRunRequest } from '../../use-cases/runs/start-run';
import { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import type { McpPool } from '../../mcp-client/connections/pool';
import type { NetworkPolicy } from '../../platform/net/address-guard';
import type { PriceTable } from '../../core/pricing';
import { createEngineWorker, type EngineWorker } from '../../worker/create-worker';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { testStack } from './stack-env';
import { testLogSink, testLogger } from './test-log';
import { trackTemporalCalls } from './temporal-calls';
import { oauthRecords } from '../../store/integrations/oauth';
import { eraProbeStore } from '../../store/integrations/era-probes';
import type { WorkerVersion } from '../../core/worker-version';
import { operatorCaller } from '../../use-cases/caller';
import type { RunEndMetrics } from '../../platform/metrics/worker-metrics';

export type DatabaseKind = 'embedded' | 'external';

export interface Engine {
  db: Db;
  client: Client;
  taskQueue: string;
  /** creates an agent with a scripted model and a thread for it */
  scriptedThread(script: ScriptStep[], options?: { maxTurns?: number; instructions?: string; integrationIds?: string[] }): Promise<{ agent: Agent; threadId: string }>;
  /** one run of a scripted agent with these integrations, to its end */
  scriptedRun(integrationIds: string[], script: ScriptStep[]): Promise<{ runId: string; result: RunResult }>;
  start(req: StartRunRequest): Promise<string>;
  /** waits for the workflow to close, then returns the run's write-once result */
  result(runId: string): Promise<RunResult>;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  /** the in-process worker's MCP pool, while it runs */
  mcpPool(): McpPool | undefined;
  close(): Promise<void>;
}

export const logger = testLogger('test');

/**
 * The Temporal runtime of this test file's workers, installed when the first one starts: the SDK
 * shuts it down when its last connection closes, so a file whose engine has no in-process worker
 * creates none. Every test file has its own module registry, hence its own runtime: one installed
 * and never shut down kept its native threads (and its closures) for the rest of the jest worker,
 * and made that worker's exit slow enough for jest to force it. No signal handlers: jest owns them.
 */
let runtimeInstalled = false;
export function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.TEMPORAL_LOG_LEVEL as 'WARN' | undefined) ?? 'WARN';
  const sink = testLogSink();
  Runtime.install({
    shutdownSignals: [],
    logger: sink ? new DefaultLogger(level, ({ level: l, message, meta }) => sink(`${l} ${message}${meta ? ` ${inspect(meta, { depth: 4, breakLength: Infinity })}` : ''}\n`)) : new DefaultLogger(level),
  });
}

export interface EngineOptions {
  worker?: boolean;
  /** the worker's LLM providers; the scripted one alone by default */
  providers?: LlmProviders;
  /** the worker's own database URL (e.g. through a proxy a test cuts); the engine's by default */
  workerDatabaseUrl?: string;
  /** a database of the test's own instead of the stack's (migrated by the caller) */
  databaseUrl?: string;
  /** the worker's source_query settings; the defaults by default */
  sourceQuery?: SourceQueryOptions;
  /**
   * which addresses the worker's integrations may reach; by default, as under `npm start` without
   * keys, private ones for every integration (the test servers listen on loopback)
   */
  network?: NetworkPolicy;
  /** a versioned worker (Worker Versioning): its deployment and build */
  version?: WorkerVersion;
  /** another Temporal server than the stack's dev server (test/support/temporal-cluster.ts) */
  temporalAddress?: string;
  /** the task queue, when another engine's worker (of another build) serves it too; a new one by default */
  taskQueue?: string;
  /** the workflows the worker runs, instead of the stack's bundle of workflows/ (a module path to bundle) */
  workflowsPath?: string;
  /** the worker's Prometheus metrics, as a composition root hands them to activities */
  metrics?: RunEndMetrics;
  /** the worker's price table (PRICES_FILE) */
  prices?: PriceTable;
}

/** A client and a pool, and unless `worker: false` a worker in this process, against the stack global setup started. */
export async function startEngine(database: DatabaseKind = 'embedded', options: EngineOptions = {}): Promise<Engine> {
  const stack = testStack();
  // As a composition root does: integrations' env and header values are stored sealed.
  installSecretKeys(keyRing(Buffer.from(stack.secretsKey, 'base64')));
  const db = createPool(options.databaseUrl ?? stack.databases[database], logger);
  const temporalAddress = options.temporalAddress ?? stack.temporalAddress;
  const calls = trackTemporalCalls();
  const connection = await Connection.connect({ address: temporalAddress, interceptors: calls.interceptors });
  const client = new Client({ connection });
  const searchAttributes = new SearchAttributeGuard(connection, client.options.namespace, logger);
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  let worker: { instance: EngineWorker; running: Promise<void>; connection: NativeConnection; mcpPool: McpPool; db: Db; runChanges: RunChangeFeed } | undefined;

  const engine: Engine = {
    db, client, taskQueue,
    async scriptedThread(script, opts = {}) {
      const agent = await insertAgent(db, {
        name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, maxTurns: opts.maxTurns, instructions: opts.instructions,
        ...(opts.integrationIds ? { integrationIds: opts.integrationIds } : {}),
      });
      const thread = await insertThread(db, agent.id);
      return { agent, threadId: thread.id };
    },
    async scriptedRun(integrationIds, script) {
      const { threadId } = await engine.scriptedThread(script, { integrationIds });
      const runId = await engine.start({ threadId, input: 'go' });
      return { runId, result: await engine.result(runId) };
    },
    async start(req) {
      const { run } = await startRun({ db, client, taskQueue, searchAttributes }, operatorCaller(), req);
      return run.id;
    },
    async result(runId) {
      await client.workflow.getHandle(runId).result().catch(() => undefined);
      const result = await findRunResult(db, runId);
      if (!result) throw new Error(`run ${runId} closed without a result`);
      return result;
    },
    async startWorker() {
      quietRuntime();
      const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
      // The registry lives in this run's dir: jest workers of other runs on the machine keep theirs.
      const workerDb = options.workerDatabaseUrl ? createPool(options.workerDatabaseUrl, logger) : db;
      const mcpPool = await startMcpPool(logger, {
        groupsDir: path.join(stack.tmpDir, 'mcp-groups'), oauth: { records: oauthRecords(workerDb), logger }, eras: eraProbeStore(workerDb),
        network: options.network ?? { blockPrivateNetworks: false, privateNetworksForAll: true },
      });
      const runChanges = listenForAnswers(workerDb, logger);
      const instance = await createEngineWorker({
        connection: nativeConnection, namespace: 'default', taskQueue,
        code: {
          workflows: options.workflowsPath ? { workflowsPath: options.workflowsPath } : { workflowBundle: { codePath: stack.workflowBundlePath } },
          ...(options.version ? { version: options.version } : {}),
        },
        deps: {
          db: workerDb, logger, providers: options.providers ?? { scripted: createScriptedProvider() }, mcpPool, runChanges,
          ...(options.sourceQuery ? { sourceQuery: options.sourceQuery } : {}),
          ...(options.metrics ? { metrics: options.metrics } : {}),
          ...(options.prices ? { prices: options.prices } : {}),
        },
      });
      worker = { instance, running: instance.run(), connection: nativeConnection, mcpPool, db: workerDb, runChanges };
    },
    mcpPool: () => worker?.mcpPool,
    async stopWorker() {
      if (!worker) return;
      const w = worker;
      worker = undefined;
      w.instance.shutdown();
      await w.running;
      await w.mcpPool.closeAll();
      await w.runChanges.close();
      await w.connection.close();
      if (w.db !== db) await w.db.end();
    },
    async close() {
      await engine.stopWorker();
      const left = await calls.settle(2_000);
      if (left.length > 0) process.stderr.write(`the test engine closed with Temporal calls in flight, cancelled: ${left.join(', ')}\n`);
      await connection.close();
      await db.end();
    },
  };
  if (options.worker !== false) await engine.startWorker();
  return engine;
}
