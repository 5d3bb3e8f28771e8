import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { loadConfig } from '../../platform/config';
import { findIntegration } from '../../store/integrations/integrations';
import { startBenchInfra, type BenchInfra } from './bench-stack';
import type { floorRunWorkflow } from './bench-workflows';
import { summarizeCpuProfiles } from './cpu-profile-summary';
import { startSampler } from './sampler-process';
import { fixtureIntegration, startEngineProcesses } from './engine-processes';
import { engineRun, floorSearchAttributes, LATENCY_SHAPE, LOAD_SHAPE, scriptFor, type Engine } from './load-engine';
import { allChecked, burstRound, pairedRounds, roundsLine, steadyRound } from './paired-rounds';
import {
  assertAlive, cpuDelta, hasPollers, median, percentile, readParts, rssMb, sampleRss, reportExited, runBench, startNode, stopChildren, waitUntil,
  type Child, type CpuGroups,
} from './load-processes';
import { arg, listArg } from './bench-args';
import { counterArgs } from './capacity-meters';
import { CostTotals, readCosts } from './run-costs';
import { insertFloorRun } from './floor-records';

/**
 * `npm run bench:load [-- --floor=durable --rounds=5 --round-settle-ms=16000 --concurrency=50 --round-runs=100 --burst-runs=50 --burst-rounds=3 --rss-runs=100 --latency-n=20 --get-rate=200 --profile --only=… --arenas=default --worker-node-args="…"]`
 *
 * The production topology under load: a Temporal dev server, PostgreSQL (embedded, or a database of
 * its own on DATABASE_URL's server), an API process and a worker process built and started as the
 * production image starts them (`npm run build`, then `node dist/...`), and beside them the floor's
 * worker (test/bench/floor-worker.ts), the least a Temporal program can do for the same run shape. Every run is checked before a figure is printed.
 * --profile writes CPU profiles (node --cpu-prof) of the engine worker, the floor worker and the API, and prints their hottest functions.
 */

const ROUNDS = arg('rounds', 5);
/** a pause before each phase, so that the work one leaves behind (workflows closing, timers) lands in neither side's next */
const SETTLE_MS = 1_000;
/**
 * The pause before each measured throughput round, for the work the round before left behind to
 * drain: the Temporal server closes workflows, and fires each engine activity's heartbeat-timeout
 * timer up to 15 s after its start. The floor's activities have no heartbeat timeout: their first
 * timer is the 30 s start-to-close one, which outlasts the pause; a 32 s pause gave the same gap
 * between the two sides' Temporal CPU per run (about 10 ms), so those timers are left to land where they do.
 */
const ROUND_SETTLE_MS = arg('round-settle-ms', 16_000);
const CONCURRENCY = arg('concurrency', 50);
/** runs in each throughput round, CONCURRENCY of them in flight at a time */
const ROUND_RUNS = arg('round-runs', 2 * CONCURRENCY);
/** the burst phase: this many runs started at once, a round ending with the last; rounds per side */
const BURST_RUNS = arg('burst-runs', 50);
const BURST_ROUNDS = arg('burst-rounds', 3);
const RSS_RUNS = arg('rss-runs', 100);
const LATENCY_N = arg('latency-n', 20);
const GET_RATE = arg('get-rate', 200);
const PROFILE = process.argv.includes('--profile');
/** --worker-node-args="--max-semi-space-size=4 …" tries Node/V8 options on the engine worker alone */
const WORKER_NODE_ARGS = process.argv.find((a) => a.startsWith('--worker-node-args='))?.slice('--worker-node-args='.length).split(' ').filter(Boolean) ?? [];
/**
 * --floor=durable: the floor with a database of record (floor-records.ts: a row per step's start
 * and end, on the engine's PostgreSQL, whose CPU it then counts too): what the engine costs beyond
 * the statements any durable program sends. The measures are against the bare floor (the default).
 */
const DURABLE_FLOOR = process.argv.includes('--floor=durable');
/** --only=throughput,burst,rss,get,latency measures those phases alone (all by default) */
const ONLY = listArg('only');
const ENGINE_QUEUE = 'load-engine';
const FLOOR_QUEUE = 'load-floor';
/** Names of this run's own, so that a database kept from an earlier run (DATABASE_URL) does not collide. */
const INTEGRATION = `bench${process.pid}`;
/** the agent id the floor's runs are listed by (one, as the engine's load runs have one agent) */
const FLOOR_AGENT_ID = randomUUID();

const expectedFloor = (shape: number[], text: string) => shape.flatMap((calls, t) => Array.from({ length: calls }, (_, i) => `echo: ${text} ${t + 1}.${i}`));

let floorCounter = 0;

async function floorRun(infra: BenchInfra, shape: number[], i: number): Promise<void> {
  const text = `f${i}`;
  const workflowId = `floor-${i}-${Date.now()}`;
  // A durable floor's client records the run before it starts it, as the API does.
  if (DURABLE_FLOOR) await insertFloorRun(infra.db, workflowId, text);
  const results = await infra.client.workflow.execute<typeof floorRunWorkflow>('floorRunWorkflow', {
    taskQueue: FLOOR_QUEUE, workflowId, args: [{ script: shape, text }],
    typedSearchAttributes: floorSearchAttributes(FLOOR_AGENT_ID),
  });
  if (JSON.stringify(results) !== JSON.stringify(expectedFloor(shape, text))) throw new Error(`floor run ${i} answered wrongly: ${JSON.stringify(results)}`);
}

/**
 * GETs of running runs at a fixed rate (open loop: sent on schedule, whatever the answers' pace)
 * while `n` runs execute. They are sent and timed by a process of their own (get-sampler.ts), so
 * that the figure is the API's, not the delays of this process's event loop, busy driving the runs.
 */
async function getLatencyUnderLoad(engine: Engine, n: number): Promise<number[]> {
  const sampler = await startSampler({ url: engine.api.url, rate: GET_RATE });
  // Every run is waited for (allChecked), so the sampler stops after the last, whether or not one failed.
  const failure = await allChecked(Array.from({ length: n }, () => engineRun(engine, 'load', (id) => sampler.addRun(id))))
    .then(() => undefined, (err: unknown) => err);
  const { ms, errors } = await sampler.stop();
  // Not a figure (a run failed), but what the GETs saw meanwhile helps to tell the two problems apart.
  if (failure) throw new Error(`${(failure as Error).message}; the GETs meanwhile: p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms (n=${ms.length})`);
  if (errors > 0) throw new Error(`${errors} of ${ms.length + errors} GETs failed`);
  return ms;
}

const line = (label: string, value: string, target = '') => console.log(`${label.padEnd(58)} ${value.padEnd(50)} ${target}`);

/**
 * Measures one figure and prints it at once. A run that did not complete correctly voids the
 * figure (printed as such, and the bench exits non-zero) but not the figures of other phases.
 */
async function phase(name: string, label: string, target: string, measure: () => Promise<string>, children: Child[]): Promise<void> {
  if (ONLY && !ONLY.includes(name)) return;
  try {
    // What the phase before left running (its last workflows closing) is not this phase's.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    line(label, await measure(), target);
  } catch (err) {
    assertAlive(children);
    line(label, `NOT REPORTED: ${(err as Error).message.slice(0, 400)}`, target);
    process.exitCode = 1;
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const load1 = os.loadavg()[0];
  const config = loadConfig();
  // The Temporal server runs the runs, as the workers do: at their priority, behind the API (as `npm start` starts it).
  const infra = await startBenchInfra({ databaseUrl: config.databaseUrl, temporalNice: config.workerNice });
  const children: Child[] = [];
  const profileDir = path.join(infra.tmpDir, 'cpu-profiles');
  try {
    // The API and the worker run from the build, as the production image runs them (Dockerfile).
    const profiled = (name: string) => (PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profileDir, name)}`] : []);
    // Each engine process counts its statements, notifications and timers (pg-statement-counter.js).
    const counted = { API: path.join(infra.tmpDir, 'api-counts.json'), worker: path.join(infra.tmpDir, 'worker-counts.json') };
    const [apiCounter, workerCounter] = [counterArgs(counted.API), counterArgs(counted.worker)];
    const { api, apiProcess, worker } = await startEngineProcesses(infra, {
      // MALLOC_ARENA_MAX as the production image sets it (Dockerfile); --arenas=default leaves glibc's default.
      taskQueue: ENGINE_QUEUE, arenas: !process.argv.includes('--arenas=default'),
      apiNodeArgs: [...apiCounter.nodeArgs, ...profiled('api')], apiEnv: apiCounter.env,
      workerNodeArgs: [...workerCounter.nodeArgs, ...WORKER_NODE_ARGS, ...profiled('worker')], workerEnv: workerCounter.env,
    }, children);
    const floorBundlePath = path.join(infra.tmpDir, 'floor-bundle.js');
    await fs.writeFile(floorBundlePath, (await bundleWorkflowCode({
      workflowsPath: require.resolve('./bench-workflows'), logger: new DefaultLogger('WARN'),
    })).code);
    const integration = await fixtureIntegration(api, INTEGRATION);
    const integrationFile = path.join(infra.tmpDir, 'integration.json');
    await fs.writeFile(integrationFile, JSON.stringify(await findIntegration(infra.db, String(integration.id))));
    const floorProcess = startNode('floor worker', 'test/bench/floor-worker.ts', {
      source: true,
      nodeArgs: profiled('floor-worker'),
      args: [
        infra.temporalAddress, FLOOR_QUEUE, floorBundlePath, integrationFile, path.join(infra.tmpDir, 'floor-mcp-groups'),
        ...(DURABLE_FLOOR ? [infra.databaseUrl] : []),
      ],
    });
    children.push(floorProcess);
    const agent = async (name: string, shape: number[]) => String((await api.post('/v1/agents', {
      name: `${name}-${process.pid}`, integrationIds: [integration.id], model: { provider: 'scripted', script: scriptFor(shape, INTEGRATION) },
    })).id);
    const engine: Engine = { api, agents: { load: await agent('load', LOAD_SHAPE), latency: await agent('latency', LATENCY_SHAPE) } };
    await waitUntil('the workers', async () => (await hasPollers(infra.client, ENGINE_QUEUE)) && (await hasPollers(infra.client, FLOOR_QUEUE)), children);
    const startupS = (performance.now() - started) / 1000;
    const cpus = os.cpus();
    console.log(`\nbench:load: Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'CPU'}; load average ${load1.toFixed(2)} before start-up`);
    console.log(`database: ${config.databaseUrl ? 'DATABASE_URL' : 'embedded PostgreSQL'}; startup ${startupS.toFixed(1)} s; every run is checked`);
    console.log(`floor: ${DURABLE_FLOOR ? 'durable (a row per step\'s start and end, and one per run: test/bench/floor-records.ts)' : 'bare (no database)'}\n`);
    line('figure', 'measured', 'target');

    // Where each side's CPU time goes, per run: read from /proc around every measured round.
    const parts = { 'engine worker': worker.process.pid!, API: apiProcess.process.pid!, 'floor worker': floorProcess.process.pid!, 'bench client': process.pid };
    const database = new URL(infra.databaseUrl).pathname.slice(1);
    const reading = () => readParts(parts, process.pid, database);
    const countedProcesses = [{ name: 'API', pid: apiProcess.process.pid!, file: counted.API }, { name: 'worker', pid: worker.process.pid!, file: counted.worker }];
    const threadsOf = { API: apiProcess.process.pid!, worker: worker.process.pid!, 'floor worker': floorProcess.process.pid! };
    /** CPU seconds (and wakeups) by part over the rounds `count` wraps, per side, printed per run by `printCpu` */
    const cpuOfRounds = () => {
      const cpu: Record<'engine' | 'floor', CpuGroups> = { engine: {}, floor: {} };
      const woken: Record<'engine' | 'floor', CpuGroups> = { engine: {}, floor: {} };
      const costs = { engine: new CostTotals(), floor: new CostTotals() };
      const add = (to: CpuGroups, delta: CpuGroups) => {
        for (const [k, v] of Object.entries(delta)) to[k] = (to[k] ?? 0) + v;
      };
      const count = (side: 'engine' | 'floor') => async (round: () => Promise<number>) => {
        const costsBefore = await readCosts(side === 'engine' ? countedProcesses : [], threadsOf);
        const before = reading();
        const rate = await round();
        const after = reading();
        costs[side].add(costsBefore, await readCosts(side === 'engine' ? countedProcesses : [], threadsOf));
        add(cpu[side], cpuDelta(before.cpu, after.cpu));
        add(woken[side], cpuDelta(before.wakeups, after.wakeups));
        return rate;
      };
      const printCpu = (runs: number) => {
        const perRun = (g: CpuGroups) => Object.entries(g).filter(([, s]) => s * 1000 / runs >= 0.5).sort((a, b) => b[1] - a[1])
          .map(([k, s]) => `${k} ${(s * 1000 / runs).toFixed(1)}`).join(', ');
        const total = (g: CpuGroups) => Object.values(g).reduce((a, b) => a + b, 0) * 1000 / runs;
        const [e, f] = [total(cpu.engine), total(cpu.floor)];
        console.log(`  CPU ms per run, engine (${e.toFixed(0)} in all, ${(e / f).toFixed(2)}× the floor's): ${perRun(cpu.engine)}`);
        console.log(`  CPU ms per run, floor (${f.toFixed(0)} in all): ${perRun(cpu.floor)}`);
        const wakeups = (g: CpuGroups) => Object.entries(g).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${(n / runs).toFixed(0)}`).join(', ');
        console.log(`  wakeups per run (see bench:wakeup), engine: ${wakeups(woken.engine)}; floor: ${wakeups(woken.floor)}`);
        console.log(`  engine's rounds:\n${costs.engine.lines(runs).join('\n')}`);
        console.log(`  floor's rounds: ${costs.floor.lines(runs).at(-1)!.trim()}`);
      };
      return { count, printCpu };
    };
    const steady = cpuOfRounds();
    await phase('throughput', `throughput, ${CONCURRENCY} concurrent runs (4 turns, 6 echo calls)`, '≥ 0.85×', async () => {
      const figures = await pairedRounds({
        engine: () => steady.count('engine')(() => steadyRound(CONCURRENCY, ROUND_RUNS, () => engineRun(engine, 'load'))),
        floor: () => steady.count('floor')(() => steadyRound(CONCURRENCY, ROUND_RUNS, () => floorRun(infra, LOAD_SHAPE, floorCounter++))),
      }, { rounds: ROUNDS, settleMs: ROUND_SETTLE_MS });
      // The warm-up rounds are counted too: both sides had one.
      steady.printCpu(ROUND_RUNS * (ROUNDS + 1));
      return roundsLine(figures);
    }, children);

    await phase('burst', `throughput, ${BURST_RUNS} runs started at once, until the last (${BURST_ROUNDS} rounds)`, '≥ 0.85×', async () => {
      const bursts = cpuOfRounds();
      const figures = await pairedRounds({
        engine: () => bursts.count('engine')(() => burstRound(BURST_RUNS, () => engineRun(engine, 'load'))),
        floor: () => bursts.count('floor')(() => burstRound(BURST_RUNS, () => floorRun(infra, LOAD_SHAPE, floorCounter++))),
      }, { rounds: BURST_ROUNDS, settleMs: ROUND_SETTLE_MS });
      bursts.printCpu(BURST_RUNS * (BURST_ROUNDS + 1));
      return roundsLine(figures);
    }, children);

    await phase('rss', `worker RSS, ${RSS_RUNS} concurrent runs`, 'idle ≤ 300 MB, peak − idle ≤ 100 MB', async () => {
      await new Promise((r) => setTimeout(r, 3_000));
      const workerPid = worker.process.pid!;
      const idleMb = rssMb(workerPid);
      const sampler = sampleRss(workerPid);
      let peakMb: number;
      try {
        await allChecked(Array.from({ length: RSS_RUNS }, () => engineRun(engine, 'load')));
      } finally {
        peakMb = sampler.stop();
      }
      return `idle ${idleMb.toFixed(0)} MB, peak ${peakMb.toFixed(0)} MB (+${(peakMb - idleMb).toFixed(0)})`;
    }, children);

    await phase('get', `GET /v1/runs/:id at ${GET_RATE} req/s, ${CONCURRENCY} runs executing`, 'p99 ≤ 25 ms', async () => {
      const ms = await getLatencyUnderLoad(engine, CONCURRENCY);
      return `p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms (n=${ms.length})`;
    }, children);
    await phase('get', '  the same GETs beside one run (reference)', '', async () => {
      const ms = await getLatencyUnderLoad(engine, 1);
      return `p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms (n=${ms.length})`;
    }, children);

    await phase('latency', `whole run, 2 turns + 1 echo call, p50 (n=${LATENCY_N})`, '≤ 1.50×', async () => {
      const engineMs: number[] = [];
      const floorMs: number[] = [];
      for (let i = -3; i < LATENCY_N; i++) {
        let t = performance.now();
        await engineRun(engine, 'latency');
        if (i >= 0) engineMs.push(performance.now() - t);
        t = performance.now();
        await floorRun(infra, LATENCY_SHAPE, floorCounter++);
        if (i >= 0) floorMs.push(performance.now() - t);
      }
      const [ep, fp] = [median(engineMs), median(floorMs)];
      return `engine ${ep.toFixed(0)} ms, floor ${fp.toFixed(0)} ms: ${(ep / fp).toFixed(2)}×`;
    }, children);
    console.log(`\nload average ${os.loadavg()[0].toFixed(2)} at the end`);
  } catch (err) {
    reportExited(children);
    throw err;
  } finally {
    await stopChildren(children);
    for (const name of PROFILE ? ['worker', 'floor-worker', 'api'] : []) {
      const dir = path.join(profileDir, name);
      const files = (await fs.readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.cpuprofile'));
      // Outside the bench's temporary dir, which close() removes (and outside test/.tmp, which jest clears).
      const kept = path.join(os.tmpdir(), `engine-cpu-profiles-${process.pid}`, name);
      await fs.mkdir(kept, { recursive: true });
      for (const f of files) await fs.copyFile(path.join(dir, f), path.join(kept, f));
      if (files.length > 0) console.log(`\n${name} CPU profile (${kept}):\n${await summarizeCpuProfiles(files.map((f) => path.join(kept, f)))}`);
    }
    await infra.close();
  }
}

runBench('bench:load', main);
