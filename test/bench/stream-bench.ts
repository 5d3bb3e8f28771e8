import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createProviders } from '../../llm/providers';
import { createScriptedProvider } from '../../llm/scripted';
import { insertAgent } from '../../store/agents';
import { logger, startBenchInfra } from './bench-stack';
import { cpuDelta, percentile, readParts, startNode, stopChild, waitUntil } from './load-processes';
import { createEngineWorker } from '../../worker/create-worker';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { eraProbeStore } from '../../store/integrations/era-probes';
import { freePort } from '../../platform/ports';
import { Session } from 'node:inspector/promises';
import fs from 'node:fs/promises';
import { arg } from './bench-args';

/**
 * `npm run bench:stream [-- --concurrency=50 --rounds=4 --round-runs=20 --settle-ms=16000]`: the model's words from a
 * streaming endpoint to a client of the run's event stream. A local server speaks the OpenAI wire
 * format: each answer is 20 chunks 60 ms apart, each stamped with the moment it was sent. The
 * engine's worker runs in this process and the API in a process of its own (`api/server.ts`), as in
 * production, on the bench's own Temporal dev server and PostgreSQL; the endpoint and the clients,
 * which follow every run over SSE, run in a third (stream-driver.ts), whose CPU is not counted.
 *  - latency: `concurrency` runs at once; for each stamped chunk, chunk sent → its text_delta read by the client;
 *  - CPU per run: paired rounds of `round-runs` runs at once, streaming against the same run shape
 *    with `"stream": false` (the endpoint then answers once, after the same 1.14 s), all of this
 *    process, the PostgreSQL backends and the Temporal server, per run.
 * With BENCH_PROFILE_DIR set, this process (the worker) is profiled during the paired rounds, one
 * V8 CPU profile per kind (stream.cpuprofile, whole.cpuprofile), for cpu-profile-summary.ts.
 */

const CONCURRENCY = arg('concurrency', 50);
const ROUNDS = arg('rounds', 4);
/**
 * The pause between the latency phase and the paired rounds: its 50 runs' last work (workflows
 * closing, the Temporal server's heartbeat-timeout timers up to 15 s after each activity's start)
 * would otherwise land in the first round, a streaming one (as bench:load pauses before its rounds).
 */
const SETTLE_MS = arg('settle-ms', 16_000);
const ROUND_RUNS = arg('round-runs', 20);

/** The driver (stream-driver.ts) in a process of its own: the endpoint and the clients. */
async function startDriver(): Promise<{ baseUrl: string; run(apiUrl: string, agentId: string, n: number): Promise<number[]>; stop(): Promise<void>; child: ChildProcess }> {
  const child = fork(path.join(__dirname, 'stream-driver.ts'), [], { execArgv: ['--import', 'tsx'] });
  // One listener each for the next message and for an exit meanwhile, both removed once either comes.
  const next = () => new Promise<Record<string, unknown>>((resolve, reject) => {
    const onMessage = (m: unknown) => {
      child.off('exit', onExit);
      resolve(m as Record<string, unknown>);
    };
    const onExit = (code: number | null) => {
      child.off('message', onMessage);
      reject(new Error(`the driver exited (${code})`));
    };
    child.once('message', onMessage);
    child.once('exit', onExit);
  });
  const { baseUrl } = await next() as { baseUrl: string };
  return {
    baseUrl, child,
    async run(apiUrl, agentId, n) {
      const reply = next();
      child.send({ apiUrl, agentId, n });
      const answer = await reply;
      if (answer.error) throw new Error(String(answer.error));
      return answer.latencies as number[];
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('stop');
      await exited;
    },
  };
}

/** Profiles of this process, one per kind of round, merged over its rounds (BENCH_PROFILE_DIR). */
async function kindProfiler() {
  const dir = process.env.BENCH_PROFILE_DIR;
  if (!dir) return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  const profiles: Record<string, object[]> = {};
  return {
    start: () => session.post('Profiler.start'),
    async stop(kind: string) {
      const { profile } = await session.post('Profiler.stop');
      (profiles[kind] ??= []).push(profile);
    },
    async save() {
      await fs.mkdir(dir, { recursive: true });
      for (const [kind, list] of Object.entries(profiles)) {
        for (const [i, profile] of list.entries()) await fs.writeFile(`${dir}/${kind}-${i}.cpuprofile`, JSON.stringify(profile));
      }
      session.disconnect();
    },
  };
}

async function main(): Promise<void> {
  const infra = await startBenchInfra();
  try {
    const driver = await startDriver();
    infra.onClose(() => driver.stop());
    const endpoint = driver;
    // The endpoint is on loopback, as a local model server is: no key, and loopback allowed.
    const providers = { ...createProviders({ readApiKey: () => undefined, allowedKeyEnvs: [], logger, networkPolicy: { blockPrivateNetworks: false } }), scripted: createScriptedProvider() };
    const taskQueue = 'bench-stream';
    const mcpPool = await startMcpPool(logger, { groupsDir: path.join(infra.tmpDir, 'mcp-groups'), eras: eraProbeStore(infra.db) });
    infra.onClose(() => mcpPool.closeAll());
    const worker = await createEngineWorker({ connection: infra.env.nativeConnection, namespace: 'default', taskQueue, deps: { db: infra.db, logger, providers, mcpPool } });
    const running = worker.run();
    infra.onClose(async () => {
      worker.shutdown();
      await running;
    });
    const port = await freePort();
    const api = startNode('API', 'api/server.ts', {
      source: true,
      env: {
        DATABASE_URL: infra.databaseUrl, TEMPORAL_ADDRESS: infra.temporalAddress, TASK_QUEUE: taskQueue, LOG_LEVEL: 'warn',
        HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_PER_MINUTE: '0', AGENTS_DIR: path.join(infra.tmpDir, 'agents'),
      },
    });
    infra.onClose(() => stopChild(api));
    const apiUrl = `http://127.0.0.1:${port}`;
    await waitUntil('the API', async () => (await fetch(`${apiUrl}/healthz`).catch(() => undefined))?.status === 200, [api]);

    const agentOf = async (stream: boolean) => (await insertAgent(infra.db, {
      name: `bench-${stream ? 'stream' : 'whole'}-${process.pid}`, model: { provider: 'openai', name: 'bench', baseUrl: endpoint.baseUrl, stream },
    })).id;
    const agents = { stream: await agentOf(true), whole: await agentOf(false) };
    const runMany = async (agentId: string, n: number, latencies: number[]) => {
      latencies.push(...await driver.run(apiUrl, agentId, n));
    };

    await runMany(agents.stream, 5, []); // warm-up
    await runMany(agents.whole, 5, []);
    const latencies: number[] = [];
    await runMany(agents.stream, CONCURRENCY, latencies);
    const temporalParent = process.pid;
    const cpu = { stream: [] as number[], whole: [] as number[] };
    const parts = { stream: {} as Record<string, number>, whole: {} as Record<string, number> };
    const wakeups = { stream: {} as Record<string, number>, whole: {} as Record<string, number> };
    const profiler = await kindProfiler();
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of round % 2 === 0 ? (['stream', 'whole'] as const) : (['whole', 'stream'] as const)) {
        // The driver is this process's child: named apart, and left out.
        const named = { worker: process.pid, API: api.process.pid!, driver: driver.child.pid! };
        const before = readParts(named, temporalParent, 'bench');
        await profiler?.start();
        await runMany(agents[kind], ROUND_RUNS, []);
        await new Promise((resolve) => setTimeout(resolve, 500));
        await profiler?.stop(kind);
        const after = readParts(named, temporalParent, 'bench');
        const { driver: _driver, ...used } = cpuDelta(before.cpu, after.cpu);
        const { driver: _driverWoken, ...woken } = cpuDelta(before.wakeups, after.wakeups);
        for (const [part, n] of Object.entries(woken)) wakeups[kind][part] = (wakeups[kind][part] ?? 0) + n / ROUND_RUNS / ROUNDS;
        cpu[kind].push((Object.values(used).reduce((a, b) => a + b, 0) * 1000) / ROUND_RUNS);
        for (const [part, s] of Object.entries(used)) parts[kind][part] = (parts[kind][part] ?? 0) + (s * 1000) / ROUND_RUNS / ROUNDS;
      }
    }
    await profiler?.save();
    const ms = (x: number) => `${x.toFixed(1)} ms`;
    const per = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`CPU per run (the engine's worker and API processes, PostgreSQL, Temporal; not the endpoint or the clients), ${ROUNDS} paired rounds of ${ROUND_RUNS} runs: `
      + `streaming ${ms(per(cpu.stream))} [${cpu.stream.map((x) => x.toFixed(0)).join(', ')}], "stream": false ${ms(per(cpu.whole))} `
      + `[${cpu.whole.map((x) => x.toFixed(0)).join(', ')}]; ratio ${(per(cpu.stream) / per(cpu.whole)).toFixed(3)}`);
    const byPart = (k: 'stream' | 'whole') => Object.entries(parts[k]).map(([part, v]) => `${part} ${ms(v)}`).join(', ');
    console.log(`  per part: streaming ${byPart('stream')}; "stream": false ${byPart('whole')}`);
    const wokenBy = (k: 'stream' | 'whole') => Object.entries(wakeups[k]).map(([part, n]) => `${part} ${n.toFixed(0)}`).join(', ');
    console.log(`  wakeups per run (threads put to sleep and woken again; see bench:wakeup): streaming ${wokenBy('stream')}; "stream": false ${wokenBy('whole')}`);
    if (latencies.length === 0) throw new Error('no text_delta reached the clients');
    console.log(`chunk sent → text_delta read, ${CONCURRENCY} runs streaming at once (${latencies.length} chunks): `
      + `p50 ${ms(percentile(latencies, 50))}, p90 ${ms(percentile(latencies, 90))}, p99 ${ms(percentile(latencies, 99))}, max ${ms(Math.max(...latencies))}`);
  } finally {
    await infra.close();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
