import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../platform/config';
import { freePort } from '../../platform/ports';
import { startBenchInfra, type BenchInfra } from './bench-stack';
import {
  createScriptedAgent, engineRun, LOAD_SHAPE, scriptFor, type Engine,
} from './load-engine';
import { buildEngine, fixtureIntegration as createEchoIntegration, startEngineProcesses, type Api } from './engine-processes';
import { alternatingRounds, steadyRound } from './paired-rounds';
import {
  cpuDelta, hasPollers, median, percentile, readParts, reportExited, runBench, stopChildren, waitUntil, type Child, type CpuGroups,
} from './load-processes';
import { arg, listArg } from './bench-args';

/**
 * `npm run bench:metrics [-- --rounds=5 --concurrency=50 --round-runs=100 --round-settle-ms=16000 --scrape-every-ms=5000 --running=50 --scrapes=50 --only=cpu,scrape]`
 *
 * What Prometheus metrics cost, on bench:load's topology (load-engine.ts): two engines on the same
 * Temporal server and PostgreSQL, each an API and a worker process from the build, on task queues of
 * their own. One serves metrics (METRICS_PORT: its API builds an ApiMetrics, its worker a
 * WorkerMetrics, both with prom-client's process metrics) and is scraped, both endpoints, every
 * --scrape-every-ms (5 s: three times Prometheus' default 15 s); the other has none.
 * - cpu: rounds of bench:load's runs (4 turns, 6 echo calls), --concurrency in flight, on each
 *   engine in turn (alternating which goes first, after a pause, as bench:load pairs its rounds); the
 *   CPU time of each engine's API and worker (with the MCP servers it started) read from /proc around
 *   each round. Each on round is set against the off round beside it; target: on ≤ 1.03 × off.
 * - scrape: --running runs that stay running on the engine with metrics (half in a 120 s LLM turn,
 *   half with a tool call waiting for approval), then --scrapes scrapes of the worker's and the API's
 *   /metrics one after the other; target: the worker's p95 ≤ 50 ms.
 */

const ROUNDS = arg('rounds', 5);
/** as bench:load's: the work a round leaves behind (workflows closing, heartbeat-timeout timers) lands before the next */
const ROUND_SETTLE_MS = arg('round-settle-ms', 16_000);
const CONCURRENCY = arg('concurrency', 50);
const ROUND_RUNS = arg('round-runs', 2 * CONCURRENCY);
const SCRAPE_EVERY_MS = arg('scrape-every-ms', 5_000);
const RUNNING = arg('running', 50);
const SCRAPES = arg('scrapes', 50);
const ONLY = listArg('only');
const CPU_TARGET = 1.03;
const SCRAPE_TARGET_MS = 50;
const INTEGRATION = `mbench${process.pid}`;

interface Side {
  engine: Engine;
  /** its processes, for readParts: each with the processes it started */
  pids: Record<'API' | 'worker', number>;
}

/** The engine with metrics: its two endpoints. */
interface Scraped { api: string; worker: string }

/** One round's CPU seconds by part (API, worker, PostgreSQL, Temporal server) and its runs/s. */
interface RoundCpu { cpu: CpuGroups; rate: number }

async function startSide(infra: BenchInfra, name: 'on' | 'off', children: Child[]): Promise<Side & { scraped?: Scraped }> {
  const metricsPorts = name === 'on' ? { api: await freePort(), worker: await freePort() } : undefined;
  const { api, apiProcess, worker } = await startEngineProcesses(infra, {
    // Built once, before both sides; MALLOC_ARENA_MAX as the production image sets it (Dockerfile), as bench:load does.
    build: false, taskQueue: `metrics-${name}`, agentsDir: path.join(infra.tmpDir, `agents-${name}`), label: `metrics ${name}`,
    ...(metricsPorts ? { apiEnv: { METRICS_PORT: String(metricsPorts.api) }, workerEnv: { METRICS_PORT: String(metricsPorts.worker) } } : {}),
  }, children);
  const scraped = metricsPorts && {
    api: `http://127.0.0.1:${metricsPorts.api}/metrics`, worker: `http://127.0.0.1:${metricsPorts.worker}/metrics`,
  };
  return { engine: { api, agents: { load: '', latency: '' } }, pids: { API: apiProcess.process.pid!, worker: worker.process.pid! }, scraped };
}

/** One scrape: its text and how long it took to the last byte; fails on anything but 200. */
async function scrape(url: string): Promise<{ text: string; ms: number }> {
  const t = performance.now();
  const res = await fetch(url);
  const text = await res.text();
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${text.slice(0, 200)}`);
  return { text, ms };
}

/** Prometheus' part: both endpoints every `everyMs` until stopped; stop() fails if a scrape failed. */
function startScraper(urls: Scraped, everyMs: number): { stop(): Promise<number> } {
  let count = 0;
  let failure: unknown;
  let inFlight: Promise<unknown> = Promise.resolve();
  const tick = () => {
    inFlight = Promise.all([scrape(urls.api), scrape(urls.worker)]).then(() => (count += 1), (err: unknown) => (failure ??= err));
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await inFlight;
      if (failure) throw failure as Error;
      return count;
    },
  };
}

/** A sample's value in a scrape's text, 0 when absent. */
function sampleValue(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((p) => l.includes(p)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const sum = (g: CpuGroups, parts: string[]) => parts.reduce((a, p) => a + (g[p] ?? 0), 0);
const ms = (seconds: number, runs: number) => (seconds * 1000) / runs;

/** The CPU phase: paired rounds on and off, printed per run; returns whether the API and worker's ratio meets the target. */
async function cpuPhase(on: Side, off: Side, database: string): Promise<boolean> {
  const round = (side: Side) => async (): Promise<RoundCpu> => {
    const before = readParts(side.pids, process.pid, database).cpu;
    const rate = await steadyRound(CONCURRENCY, ROUND_RUNS, () => engineRun(side.engine, 'load'));
    return { cpu: cpuDelta(before, readParts(side.pids, process.pid, database).cpu), rate };
  };
  const [onRounds, offRounds] = await alternatingRounds(round(on), round(off), { rounds: ROUNDS, settleMs: ROUND_SETTLE_MS });
  const parts: [string, string[]][] = [['API', ['API']], ['worker', ['worker']], ['API + worker', ['API', 'worker']],
    ['PostgreSQL', ['PostgreSQL']], ['Temporal server', ['Temporal server']]];
  console.log(`CPU ms per run (${ROUNDS} rounds of ${ROUND_RUNS} runs per side, ${CONCURRENCY} in flight; ratio: median of the paired rounds' on/off)`);
  let verdict = true;
  for (const [label, of] of parts) {
    const onMs = onRounds.map((r) => ms(sum(r.cpu, of), ROUND_RUNS));
    const offMs = offRounds.map((r) => ms(sum(r.cpu, of), ROUND_RUNS));
    const ratios = onMs.map((x, i) => x / offMs[i]);
    const ratio = median(ratios);
    const judged = label === 'API + worker' || label === 'API' || label === 'worker';
    if (label === 'API + worker') verdict = ratio <= CPU_TARGET;
    const pass = judged ? (ratio <= CPU_TARGET ? 'PASS' : 'FAIL') : '(reference)';
    console.log(`  ${label.padEnd(16)} on ${median(onMs).toFixed(1).padStart(6)}, off ${median(offMs).toFixed(1).padStart(6)}: `
      + `${ratio.toFixed(3)} ${pass}  (rounds on/off: ${onMs.map((x, i) => `${x.toFixed(1)}/${offMs[i].toFixed(1)}`).join(' ')})`);
  }
  const rates = (rs: RoundCpu[]) => rs.map((r) => r.rate.toFixed(1)).join(' ');
  console.log(`  runs/s, on: ${rates(onRounds)}; off: ${rates(offRounds)}`);
  console.log(`  verdict (API + worker ≤ ${CPU_TARGET}×): ${verdict ? 'PASS' : 'FAIL'}`);
  return verdict;
}

/** Starts `n` runs that stay running (half in a 120 s LLM turn, half waiting for approval); returns their ids once they are there. */
async function startRunningRuns(api: Api, scraped: Scraped, n: number): Promise<string[]> {
  const held = await createEchoIntegration(api, `${INTEGRATION}ap`, { approval: { default: 'always' } });
  const slow = await createScriptedAgent(api, `slow-${process.pid}`, [], [{ text: 'slow', delayMs: 120_000 }]);
  const waits = await createScriptedAgent(api, `waits-${process.pid}`, [held.id], [
    { toolCalls: [{ name: `${INTEGRATION}ap__echo`, arguments: { text: 'held' } }] }, { text: 'done' },
  ]);
  const approvals = Math.floor(n / 2);
  const ids = await Promise.all(Array.from({ length: n }, async (_, i) => String((await api.post('/v1/runs', {
    agentId: i < approvals ? waits : slow, input: 'go',
  })).id)));
  // Every run is there: the approvals counted by the API's gauge, every run still running.
  const waiting = async () => sampleValue((await scrape(scraped.api)).text, 'agent_engine_runs_waiting', 'waiting_for="approval"') === approvals;
  await waitUntil(`${approvals} runs waiting for approval`, waiting, [], 60_000);
  for (const id of ids) {
    const { body } = await api.get(`/v1/runs/${id}`);
    if (body.status !== 'running') throw new Error(`run ${id} is ${String(body.status)}, not running`);
  }
  return ids;
}

/** The scrape phase; returns whether the worker's p95 meets the target. */
async function scrapePhase(on: Side, scraped: Scraped): Promise<boolean> {
  const ids = await startRunningRuns(on.engine.api, scraped, RUNNING);
  const times: Record<'worker' | 'API', number[]> = { worker: [], API: [] };
  try {
    for (let i = -3; i < SCRAPES; i++) {
      for (const [name, url] of [['worker', scraped.worker], ['API', scraped.api]] as const) {
        const { ms } = await scrape(url);
        if (i >= 0) times[name].push(ms);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const still = await Promise.all(ids.map(async (id) => (await on.engine.api.get(`/v1/runs/${id}`)).body.status));
    if (still.some((s) => s !== 'running')) throw new Error(`runs ended during the scrapes: ${still.filter((s) => s !== 'running').length}`);
  } finally {
    await Promise.allSettled(ids.map((id) => on.engine.api.post(`/v1/runs/${id}/cancel`, {})));
  }
  console.log(`/metrics scrapes with ${RUNNING} runs running (${Math.floor(RUNNING / 2)} waiting for approval), n=${SCRAPES} each, one at a time`);
  let verdict = true;
  for (const name of ['worker', 'API'] as const) {
    const t = times[name];
    const p95 = percentile(t, 95);
    if (name === 'worker') verdict = p95 <= SCRAPE_TARGET_MS;
    console.log(`  ${name.padEnd(7)} p50 ${percentile(t, 50).toFixed(1)} ms, p95 ${p95.toFixed(1)} ms, max ${Math.max(...t).toFixed(1)} ms: `
      + `${p95 <= SCRAPE_TARGET_MS ? 'PASS' : 'FAIL'} (p95 ≤ ${SCRAPE_TARGET_MS} ms)${name === 'API' ? ' (reference)' : ''}`);
  }
  return verdict;
}

async function main(): Promise<void> {
  const load1 = os.loadavg()[0];
  const config = loadConfig();
  const infra = await startBenchInfra({ databaseUrl: config.databaseUrl, temporalNice: config.workerNice });
  const children: Child[] = [];
  try {
    buildEngine();
    const on = await startSide(infra, 'on', children);
    const off = await startSide(infra, 'off', children);
    const scraped = on.scraped!;
    // Both engines share the database: one integration and one agent serve both.
    const integration = await createEchoIntegration(on.engine.api, INTEGRATION);
    const load = await createScriptedAgent(on.engine.api, `load-${process.pid}`, [integration.id], scriptFor(LOAD_SHAPE, INTEGRATION));
    for (const side of [on, off]) side.engine.agents.load = load;
    await waitUntil('the workers', async () => (await hasPollers(infra.client, 'metrics-on')) && (await hasPollers(infra.client, 'metrics-off')), children);
    const cpus = os.cpus();
    console.log(`\nbench:metrics: Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'CPU'}; load average ${load1.toFixed(2)} before start-up`);
    console.log(`scraping both /metrics of the engine with metrics every ${SCRAPE_EVERY_MS} ms; every run is checked\n`);
    const scraper = startScraper(scraped, SCRAPE_EVERY_MS);
    let pass = true;
    try {
      if (!ONLY || ONLY.includes('cpu')) pass = (await cpuPhase(on, off, new URL(infra.databaseUrl).pathname.slice(1))) && pass;
    } finally {
      console.log(`  (${await scraper.stop()} scrapes of each endpoint meanwhile, every one answered)`);
    }
    if (!ONLY || ONLY.includes('cpu')) {
      // The metrics were recorded: every run of the on side, its warm-up round's included, counted once.
      const runsEnded = sampleValue((await scrape(scraped.worker)).text, 'agent_engine_runs_ended_total', 'status="completed"');
      if (runsEnded !== ROUND_RUNS * (ROUNDS + 1)) throw new Error(`the worker with metrics counted ${runsEnded} completed runs`);
      console.log(`  the worker with metrics counted ${runsEnded} completed runs, as many as it ran\n`);
    }
    if (!ONLY || ONLY.includes('scrape')) pass = (await scrapePhase(on, scraped)) && pass;
    console.log(`\nload average ${os.loadavg()[0].toFixed(2)} at the end`);
    if (!pass) process.exitCode = 1;
  } catch (err) {
    reportExited(children);
    throw err;
  } finally {
    await stopChildren(children);
    await infra.close();
  }
}

runBench('bench:metrics', main);
