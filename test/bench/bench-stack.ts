import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import type { Integration } from '../../core/integration';
import { toolTaskQueue } from '../../core/tool-call';
import { startEmbeddedPostgres } from '../../store/embedded-postgres';
import { migrate } from '../../store/migrations';
import { createPool, type Db } from '../../store/pool';
import { createScriptedProvider } from '../../llm/scripted';
import { createLogger } from '../../platform/logger';
import type { McpPool } from '../../mcp-client/connections/pool';
import { niced } from '../../platform/processes';
import { resolveTemporalCli } from '../../platform/temporal/cli';
import { runSearchAttributeKeys } from '../../core/search-attributes';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import type { BenchActivities } from './bench-workflows';
import type { FloorRecords } from './floor-records';
import { freePort } from '../../platform/ports';

/** The servers a benchmark runs on, started here and stopped by close(): nothing is shared with other runs. */
export interface BenchInfra {
  db: Db;
  databaseUrl: string;
  client: Client;
  env: TestWorkflowEnvironment;
  temporalAddress: string;
  tmpDir: string;
  /** registers a cleanup step; close() runs them in reverse order */
  onClose(step: () => Promise<unknown>): void;
  close(): Promise<void>;
}

/** Everything `npm run bench` runs on: the servers plus a worker in this process. */
export interface BenchStack extends BenchInfra {
  taskQueue: string;
  mcpPool: McpPool;
  /** the integration the bare activity calls; set before the first bare call */
  bareTarget: { integration?: Integration };
}

export const logger = createLogger('warn', 'bench');

/** Runs fn for each started thing in reverse order, even when one of them fails. */
async function closeInReverse(closers: (() => Promise<unknown>)[]): Promise<void> {
  for (const close of closers.reverse()) {
    await close().catch((err: Error) => logger.error({ err: err.message }, 'bench cleanup step failed'));
  }
}

/**
 * A database of this run's own on the server of `url`, dropped at close: a run neither meets an
 * earlier run's rows nor shares its database (and so its backends' CPU time) with anything else.
 */
let databasesMade = 0;

async function ownDatabase(url: string): Promise<{ url: string; stop(): Promise<unknown> }> {
  // A bench may start several engines (bench:tenants): each has a database of its own.
  databasesMade += 1;
  const name = `engine_bench_${process.pid}_${databasesMade}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    url: own.toString(),
    async stop() {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * The Temporal CLI to start, run at niceness `nice`: the SDK's test server starts the executable
 * it is given, so a script execs the CLI through `nice` (as an operator sharing a machine starts
 * `nice -n 10 temporal server start-dev`, and `npm start` starts its dev server).
 */
async function nicedCli(cliPath: string, nice: number, dir: string): Promise<string> {
  const { command, args } = niced(nice, cliPath, []);
  if (command === cliPath) return cliPath;
  const script = path.join(dir, 'temporal-niced');
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  await fs.writeFile(script, `#!/bin/sh\nexec ${[command, ...args].map(quote).join(' ')} "$@"\n`, { mode: 0o755 });
  return script;
}

let runtimeInstalled = false;

/**
 * A Temporal dev server and a PostgreSQL: the embedded one, or a database of its own on `databaseUrl`'s
 * server. `temporalNice`: the niceness the Temporal server runs at (0 by default).
 */
export async function startBenchInfra(options: { databaseUrl?: string; temporalNice?: number } = {}): Promise<BenchInfra> {
  // Once per process: a bench that starts several engines (bench:tenants) installs it with the first.
  if (!runtimeInstalled) Runtime.install({ logger: new DefaultLogger('WARN') });
  runtimeInstalled = true;
  const tmpDir = await fs.mkdtemp(path.join(os.tmpdir(), 'engine-bench-'));
  const closers: (() => Promise<unknown>)[] = [() => fs.rm(tmpDir, { recursive: true, force: true })];
  // mkdtemp makes it 0700; run as root, PostgreSQL runs as the postgres user and must reach its data dir inside.
  await fs.chmod(tmpDir, 0o755);
  try {
    const cliPath = await nicedCli(await resolveTemporalCli({ logger }), options.temporalNice ?? 0, tmpDir);
    const [envStarted, pgStarted] = await Promise.allSettled([
      TestWorkflowEnvironment.createLocal({
        server: { executable: { type: 'existing-path', path: cliPath }, searchAttributes: runSearchAttributeKeys, ip: '127.0.0.1' },
      }),
      options.databaseUrl
        ? ownDatabase(options.databaseUrl)
        : freePort().then((port) => startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'pg'), port, logger, database: 'bench' })),
    ]);
    // One of the two may have started although the other failed: it is stopped all the same.
    if (envStarted.status === 'fulfilled') closers.push(() => envStarted.value.teardown());
    if (pgStarted.status === 'fulfilled') closers.push(() => pgStarted.value.stop());
    if (envStarted.status === 'rejected') throw envStarted.reason;
    if (pgStarted.status === 'rejected') throw pgStarted.reason;
    const [env, pg] = [envStarted.value, pgStarted.value];
    const db = createPool(pg.url, logger);
    closers.push(() => db.end());
    await migrate(db);
    return {
      db, databaseUrl: pg.url, client: env.client, env, temporalAddress: env.address, tmpDir,
      onClose: (step) => closers.push(step),
      close: () => closeInReverse(closers),
    };
  } catch (err) {
    await closeInReverse(closers);
    throw err;
  }
}

/**
 * The bench activities: the same MCP call as the engine's MCP activity makes, through the same
 * pool, without its bookkeeping; with `records` (bench:load --floor=durable), each step also writes
 * its start and its end (floor-records.ts).
 */
export function createBenchActivities(mcpPool: McpPool, target: { integration?: Integration }, records?: FloorRecords): BenchActivities {
  const runId = () => Context.current().info.workflowExecution?.workflowId ?? '';
  return {
    async benchEcho({ text }) {
      const integration = target.integration;
      if (!integration) throw new Error('no bench integration');
      await records?.beginCall(runId(), text);
      const result = await mcpPool.withClient(integration, (c) => c.callTool({ name: 'echo', arguments: { text } }));
      const answer = (result.content as { text?: string }[])[0]?.text ?? '';
      await records?.endCall(runId(), text, answer);
      return answer;
    },
    // The floor's "LLM": it decides the turn's tool calls from its script, as the scripted provider does.
    async floorLlmTurn({ script, turn, text }) {
      await records?.beginTurn(runId(), turn);
      const calls = script[turn - 1] ?? 0;
      const reply = { toolCalls: Array.from({ length: calls }, (_, i) => ({ name: 'echo', arguments: { text: `${text} ${turn}.${i}` } })) };
      await records?.endTurn(runId(), reply);
      return reply;
    },
  };
}

export async function startBenchStack(): Promise<BenchStack> {
  const infra = await startBenchInfra();
  try {
    const mcpPool = await startMcpPool(logger, { groupsDir: path.join(infra.tmpDir, 'mcp-groups') });
    infra.onClose(() => mcpPool.closeAll());
    const bareTarget: { integration?: Integration } = {};
    const taskQueue = 'bench';
    const activities = {
      ...createActivities({ db: infra.db, logger, providers: { scripted: createScriptedProvider() }, mcpPool }),
      ...createBenchActivities(mcpPool, bareTarget),
    };
    const worker = await Worker.create({
      connection: infra.env.nativeConnection, namespace: 'default', taskQueue, workflowsPath: require.resolve('./bench-workflows'), activities,
    });
    // The engine's runs dispatch their tool calls to the tool queue, as the engine's own worker polls it (worker/create-worker.ts).
    const toolWorker = await Worker.create({ connection: infra.env.nativeConnection, namespace: 'default', taskQueue: toolTaskQueue(taskQueue), activities });
    const running = Promise.all([worker.run(), toolWorker.run()]);
    // Closed in reverse: the worker stops before the pool it uses, the database and the server.
    infra.onClose(async () => {
      worker.shutdown();
      toolWorker.shutdown();
      await running;
    });
    return { ...infra, taskQueue, mcpPool, bareTarget };
  } catch (err) {
    await infra.close();
    throw err;
  }
}
