import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent, type Agent } from '../../core/db/agents';
import { createPool, type Db } from '../../core/db/pool';
import { findRunResult, type RunResult } from '../../core/db/run-store';
import { insertThread } from '../../core/db/threads';
import { createScriptedProvider } from '../../core/llm/scripted';
import type { LlmProviders } from '../../core/llm/types';
import { createLogger } from '../../core/logger';
import { startRun, type StartRunRequest } from '../../core/runs/start-run';
import type { McpPool } from '../../core/mcp/pool';
import { createEngineWorker } from '../../worker/create-worker';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { testStack } from './stack-env';

export type DatabaseKind = 'embedded' | 'external';

export interface Engine {
  db: Db;
  client: Client;
  taskQueue: string;
  /** creates an agent with a scripted model and a thread for it */
  scriptedThread(script: ScriptStep[], options?: { maxTurns?: number; instructions?: string }): Promise<{ agent: Agent; threadId: string }>;
  start(req: StartRunRequest): Promise<string>;
  /** waits for the workflow to close, then returns the run's write-once result */
  result(runId: string): Promise<RunResult>;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export const logger = createLogger(process.env.LOG_LEVEL ?? 'warn', 'test');

/** A worker in this process, a client and a pool, against the stack global setup started. */
let runtimeInstalled = false;
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({ logger: new DefaultLogger((process.env.TEMPORAL_LOG_LEVEL as 'WARN' | undefined) ?? 'WARN') });
}

export interface EngineOptions {
  worker?: boolean;
  /** the worker's LLM providers; the scripted one alone by default */
  providers?: LlmProviders;
}

export async function startEngine(database: DatabaseKind = 'embedded', options: EngineOptions = {}): Promise<Engine> {
  quietRuntime();
  const stack = testStack();
  const db = createPool(stack.databases[database], logger);
  const connection = await Connection.connect({ address: stack.temporalAddress });
  const client = new Client({ connection });
  const taskQueue = `test-${randomUUID()}`;
  let worker: { instance: Worker; running: Promise<void>; connection: NativeConnection; mcpPool: McpPool } | undefined;

  const engine: Engine = {
    db, client, taskQueue,
    async scriptedThread(script, opts = {}) {
      const agent = await insertAgent(db, {
        name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, maxTurns: opts.maxTurns, instructions: opts.instructions,
      });
      const thread = await insertThread(db, agent.id);
      return { agent, threadId: thread.id };
    },
    async start(req) {
      const { run } = await startRun({ db, client, taskQueue }, req);
      return run.id;
    },
    async result(runId) {
      await client.workflow.getHandle(runId).result().catch(() => undefined);
      const result = await findRunResult(db, runId);
      if (!result) throw new Error(`run ${runId} closed without a result`);
      return result;
    },
    async startWorker() {
      const nativeConnection = await NativeConnection.connect({ address: stack.temporalAddress });
      // The registry lives in this run's dir: jest workers of other runs on the machine keep theirs.
      const mcpPool = await startMcpPool(logger, { groupsDir: path.join(stack.tmpDir, 'mcp-groups') });
      const instance = await createEngineWorker({
        connection: nativeConnection, namespace: 'default', taskQueue, workflowBundlePath: stack.workflowBundlePath,
        deps: { db, logger, providers: options.providers ?? { scripted: createScriptedProvider() }, mcpPool },
      });
      worker = { instance, running: instance.run(), connection: nativeConnection, mcpPool };
    },
    async stopWorker() {
      if (!worker) return;
      const w = worker;
      worker = undefined;
      w.instance.shutdown();
      await w.running;
      await w.mcpPool.closeAll();
      await w.connection.close();
    },
    async close() {
      await engine.stopWorker();
      await connection.close();
      await db.end();
    },
  };
  if (options.worker !== false) await engine.startWorker();
  return engine;
}
