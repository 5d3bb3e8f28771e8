import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../platform/config';
import { createPool } from '../../store/pool';
import { startTemporalCluster, type TemporalCluster } from '../support/temporal-cluster';
import { logger, startBenchInfra, type BenchInfra } from './bench-stack';
import { connectionPeak, counterArgs, notificationCounter, read, type Meters } from './capacity-meters';
import { idleRates, printShape, printTable, shapeFigures, type IdleRates, type ShapeFigures } from './capacity-report';
import { capacityShapes, type Shape } from './capacity-shapes';
import { temporalFigures } from './capacity-temporal';
import { startEngineProcesses } from './engine-processes';
import { assertAlive, hasPollers, runBench, stopChildren, waitUntil, type Child } from './load-processes';
import { allChecked, steadyRound } from './paired-rounds';
import { arg, listArg } from './bench-args';

/**
 * `npm run bench:capacity [-- --runs=50 --concurrency=10 --settle-ms=16000 --warmup=3 --only=answer,tools,streamed,approval --temporal=cluster]`
 *
 * What one run costs each part of the system, per run shape (capacity-shapes.ts): the CPU of the
 * API process, the worker process, the Temporal dev server and the PostgreSQL backends serving the
 * engine's database; the statements the API and the worker send to PostgreSQL and the notifications
 * they get; the rows and bytes written to the engine's tables; the Temporal history (events, bytes)
 * and the server's state transitions. The API and the worker run from the build, as in production
 * (engine-processes.ts), on a Temporal dev server and PostgreSQL of the bench's own: a database of
 * its own on DATABASE_URL's server, or the embedded PostgreSQL without it (then the WAL is the engine's alone).
 * Per shape: `--runs` runs, `--concurrency` at a time, then a pause of `--settle-ms` for what they
 * leave behind (workflows closing, heartbeat-timeout timers, PostgreSQL's statistics flushed
 * from idle backends, at most 10 s late), all of it counted; the processes' idle rate over the same
 * time, measured once before the shapes, is taken off. Every run is checked. docs/capacity.md reads these figures.
 */

const RUNS = arg('runs', 50);
const CONCURRENCY = arg('concurrency', 10);
const SETTLE_MS = arg('settle-ms', 16_000);
const WARMUP = arg('warmup', 3);
const ONLY = listArg('only');
const TASK_QUEUE = 'capacity';
/** --temporal=cluster: the runs on a Temporal server (not the dev server) on the same PostgreSQL (test/support/temporal-cluster.ts) */
const CLUSTER = process.argv.includes('--temporal=cluster');

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Bench { infra: BenchInfra; meters: Meters; children: Child[] }

/** The idle rate: the same readings around a pause as long as a shape's settling, with no run under way. */
async function measureIdle(b: Bench): Promise<IdleRates> {
  // What starting the engine left behind first.
  await pause(SETTLE_MS);
  const before = await read(b.meters, 'before');
  const t = performance.now();
  await pause(SETTLE_MS);
  const after = await read(b.meters, 'after');
  return idleRates({ before, after, seconds: (performance.now() - t) / 1000 });
}

async function measureShape(b: Bench, shape: Shape, idle: IdleRates): Promise<ShapeFigures> {
  // The Temporal server stamps StartTime on its own clock, the same machine's: a second's margin back.
  const since = new Date(Date.now() - 1_000);
  await pause(1_000);
  const before = await read(b.meters, 'before');
  const t = performance.now();
  const peak = connectionPeak(b.meters.admin, b.meters.database);
  let runsPerS: number;
  try {
    runsPerS = await steadyRound(CONCURRENCY, RUNS, shape.run);
  } finally {
    await pause(SETTLE_MS);
  }
  const after = await read(b.meters, 'after');
  const seconds = (performance.now() - t) / 1000;
  const peakConnections = await peak.stop();
  assertAlive(b.children);
  return shapeFigures(shape.label, { before, after, seconds }, idle, RUNS, {
    runsPerS, peakConnections, temporal: await temporalFigures(b.infra.client, since),
  });
}

/**
 * A Temporal server on PostgreSQL (the cluster tests' own: 4 history shards, all services in one
 * process), whose address and client replace the dev server's (left idle, and not counted).
 */
async function onCluster(infra: BenchInfra): Promise<{ infra: BenchInfra; cluster: TemporalCluster }> {
  const cluster = await startTemporalCluster(path.join(infra.tmpDir, 'cluster'));
  infra.onClose(() => cluster.stop());
  const connection = await Connection.connect({ address: cluster.address });
  infra.onClose(() => connection.close());
  return { infra: { ...infra, temporalAddress: cluster.address, client: new Client({ connection, namespace: cluster.namespace }) }, cluster };
}

async function startBench(devInfra: BenchInfra, children: Child[]): Promise<{ bench: Bench; shapes: Shape[] }> {
  const { infra, cluster } = CLUSTER ? await onCluster(devInfra) : { infra: devInfra, cluster: undefined };
  const counters = { API: path.join(infra.tmpDir, 'api-counts.json'), worker: path.join(infra.tmpDir, 'worker-counts.json') };
  const [apiCounter, workerCounter] = [counterArgs(counters.API), counterArgs(counters.worker)];
  const engine = await startEngineProcesses(infra, {
    taskQueue: TASK_QUEUE, apiNodeArgs: apiCounter.nodeArgs, apiEnv: apiCounter.env, workerNodeArgs: workerCounter.nodeArgs, workerEnv: workerCounter.env,
  }, children);
  const shapes = (await capacityShapes(engine.api, String(process.pid))).filter((s) => !ONLY || ONLY.includes(s.key));
  await waitUntil('the worker', () => hasPollers(infra.client, TASK_QUEUE), children);
  // The server's other database: what the bench reads there is not the engine's database's work.
  const adminUrl = new URL(infra.databaseUrl);
  adminUrl.pathname = '/postgres';
  const admin = createPool(adminUrl.toString(), logger, 2);
  infra.onClose(() => admin.end());
  const listener = await notificationCounter(infra.databaseUrl);
  infra.onClose(() => listener.close());
  const database = new URL(infra.databaseUrl).pathname.slice(1);
  const temporal = cluster ? { [cluster.databases.history]: 'PostgreSQL (Temporal)', [cluster.databases.visibility]: 'PostgreSQL (Temporal)' } : {};
  const meters: Meters = {
    parts: { API: engine.apiProcess.process.pid!, worker: engine.worker.process.pid!, ...(cluster ? { 'Temporal server': cluster.pid } : {}) },
    temporalParent: cluster ? -1 : process.pid, databaseParts: { [database]: 'PostgreSQL', ...temporal },
    ...(cluster ? { temporalDatabases: Object.values(cluster.databases) } : {}),
    database, db: infra.db, admin, notifies: listener.counts,
    counted: [{ name: 'API', pid: engine.apiProcess.process.pid!, file: counters.API }, { name: 'worker', pid: engine.worker.process.pid!, file: counters.worker }],
  };
  return { bench: { infra, meters, children }, shapes };
}

async function main(): Promise<void> {
  const load1 = os.loadavg()[0];
  const config = loadConfig();
  if (CLUSTER && !config.databaseUrl) throw new Error('--temporal=cluster runs Temporal on the PostgreSQL of DATABASE_URL: set it');
  const infra = await startBenchInfra({ databaseUrl: config.databaseUrl });
  const children: Child[] = [];
  try {
    const { bench, shapes } = await startBench(infra, children);
    const idle = await measureIdle(bench);
    const cpus = os.cpus();
    console.log(`bench:capacity, ${new Date().toISOString()}: Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'CPU'}; `
      + `load average ${load1.toFixed(2)} before start-up; ${config.databaseUrl ? 'PostgreSQL on DATABASE_URL (a database of its own)' : 'embedded PostgreSQL'}, `
      + `${CLUSTER ? 'a Temporal server 1.32 on the same PostgreSQL (4 history shards)' : 'Temporal dev server'}`);
    console.log(`${RUNS} runs per shape, ${CONCURRENCY} at a time, each shape's window ending ${SETTLE_MS / 1000} s after its last run; every run checked`);
    const perS = (r: Record<string, number>, scale: number) => Object.entries(r).map(([k, v]) => `${k} ${(v * scale).toFixed(1)}`).join(', ');
    console.log(`idle, taken off: CPU ms/s ${perS(idle.cpu, 1000)}; statements/s ${perS(idle.statements, 1)}`
      + `${idle.temporalDb ? `; Temporal's databases per s: transactions ${idle.temporalDb.transactions.toFixed(1)}` : ''}`);
    const figures: ShapeFigures[] = [];
    for (const shape of shapes) {
      // JIT, pools, the MCP servers' start: not the runs' own cost. Each shape's just before it, so that
      // what another shape's clients leave (a stream's LISTEN, a cache following polled runs) is not its.
      await allChecked(Array.from({ length: WARMUP }, () => shape.run()));
      await pause(SETTLE_MS);
      figures.push(await measureShape(bench, shape, idle));
      printShape(figures.at(-1)!);
    }
    printTable(figures);
    console.log(`\nload average ${os.loadavg()[0].toFixed(2)} at the end`);
  } finally {
    await stopChildren(children);
    await infra.close();
  }
}

runBench('bench:capacity', main);
