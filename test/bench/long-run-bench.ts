import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { loadConfig } from '../../platform/config';
import { freePort } from '../../platform/ports';
import { findIntegration } from '../../store/integrations/integrations';
import { listEvents } from '../../store/runs/events';
import { startBenchInfra } from './bench-stack';
import type { floorRunWorkflow } from './bench-workflows';
import { assertAlive, hasPollers, median, ROOT, rssMb, sampleRss, startNode, reportExited, runBench, stopChildren, waitUntil, type Child } from './load-processes';
import { arg } from './bench-args';
import { floorSearchAttributes } from './load-engine';

/**
 * `npm run bench:long [-- --turns=1000 --arg-bytes=1024]`: whether a run's cost per turn grows with
 * its length. One engine run of `turns` LLM turns (an MCP echo call with `arg-bytes` of arguments in
 * each but the last) and, beside it at the same time, the floor workflow (test/bench/bench-workflows.ts)
 * of the same activities: an "LLM" activity per turn and the same echo call through the same MCP
 * server, with no bookkeeping. The engine's API and worker run in processes of their own, from the
 * source, on the bench's own Temporal dev server and PostgreSQL.
 * A turn's time is from its start to the next turn's start (the engine's `turn_started` events, the
 * floor's scheduled "LLM" activities in its history). Printed: the median turn over the last 50
 * turns against turns 11–60 (target ≤ 1.15×), the whole run against the floor's (≤ 1.3×), and the
 * worker's RSS growth over the run, from turn 10 to the end (≤ 50 MB).
 */

const TURNS = arg('turns', 1000);
const ARG_BYTES = arg('arg-bytes', 1024);
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts');
const ENGINE_QUEUE = 'long-engine';
const FLOOR_QUEUE = 'long-floor';
const INTEGRATION = `long${process.pid}`;

type Json = Record<string, unknown>;

async function call(url: string, method: 'GET' | 'POST', body?: Json): Promise<Json> {
  const res = await fetch(url, { method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });
  const json = (await res.json()) as Json;
  if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${JSON.stringify(json).slice(0, 500)}`);
  return json;
}

/** Turn t's time: from its start to turn t+1's start (t from 1), given each turn's start in ms. */
const turnTimes = (starts: number[]) => starts.slice(1).map((s, i) => s - starts[i]);
/** median of turns 11–60 and of the last 50 turns that have a successor */
function growth(times: number[]): { early: number; late: number } {
  return { early: median(times.slice(10, 60)), late: median(times.slice(-50)) };
}

async function main(): Promise<void> {
  const load1 = os.loadavg()[0];
  const config = loadConfig();
  const infra = await startBenchInfra({ databaseUrl: config.databaseUrl, temporalNice: config.workerNice });
  const children: Child[] = [];
  try {
    const floorBundlePath = path.join(infra.tmpDir, 'floor-bundle.js');
    await fs.writeFile(floorBundlePath, (await bundleWorkflowCode({ workflowsPath: require.resolve('./bench-workflows'), logger: new DefaultLogger('WARN') })).code);
    await fs.mkdir(path.join(infra.tmpDir, 'agents'));
    const port = await freePort();
    const common = { DATABASE_URL: infra.databaseUrl, TEMPORAL_ADDRESS: infra.temporalAddress, TASK_QUEUE: ENGINE_QUEUE, LOG_LEVEL: 'warn', MALLOC_ARENA_MAX: '2' };
    children.push(startNode('API', 'api/server.ts', { source: true, env: { ...common, HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_PER_MINUTE: '0', AGENTS_DIR: path.join(infra.tmpDir, 'agents') } }));
    const worker = startNode('worker', 'worker/main.ts', { source: true, env: common });
    children.push(worker);
    const api = `http://127.0.0.1:${port}`;
    await waitUntil('the API', async () => (await fetch(`${api}/healthz`).catch(() => undefined))?.status === 200, children);
    const integration = await call(`${api}/v1/integrations`, 'POST', {
      name: INTEGRATION, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const integrationFile = path.join(infra.tmpDir, 'integration.json');
    await fs.writeFile(integrationFile, JSON.stringify(await findIntegration(infra.db, String(integration.id))));
    children.push(startNode('floor worker', 'test/bench/floor-worker.ts', {
      source: true, args: [infra.temporalAddress, FLOOR_QUEUE, floorBundlePath, integrationFile, path.join(infra.tmpDir, 'floor-mcp-groups')],
    }));
    // Each turn but the last echoes ARG_BYTES of its own; the last answers.
    const filler = 'x'.repeat(Math.max(0, ARG_BYTES - 8));
    const script = [
      ...Array.from({ length: TURNS - 1 }, (_, t) => ({ toolCalls: [{ name: `${INTEGRATION}__echo`, arguments: { text: `${String(t + 1).padStart(6, '0')} ${filler}` } }] })),
      { text: 'done' },
    ];
    const agent = await call(`${api}/v1/agents`, 'POST', { name: `long-${process.pid}`, integrationIds: [integration.id], maxTurns: TURNS, model: { provider: 'scripted', script } });
    await waitUntil('the workers', async () => (await hasPollers(infra.client, ENGINE_QUEUE)) && (await hasPollers(infra.client, FLOOR_QUEUE)), children);
    console.log(`\nbench:long: Node ${process.version}, ${os.cpus().length} CPUs; load average ${load1.toFixed(2)} before start-up; ${TURNS} turns, ${ARG_BYTES} bytes of arguments each\n`);

    // Both at once: the engine's run and the floor's, side by side.
    const t0 = performance.now();
    const { id: runId } = await call(`${api}/v1/runs`, 'POST', { agentId: agent.id, input: 'go' });
    const floorId = `long-floor-${Date.now()}`;
    const floor = (async () => {
      const results = await infra.client.workflow.execute<typeof floorRunWorkflow>('floorRunWorkflow', {
        taskQueue: FLOOR_QUEUE, workflowId: floorId, args: [{ script: Array.from({ length: TURNS - 1 }, () => 1), text: filler }],
        typedSearchAttributes: floorSearchAttributes(randomUUID()),
      });
      if (results.length !== TURNS - 1) throw new Error(`the floor run answered ${results.length} results, not ${TURNS - 1}`);
      return performance.now() - t0;
    })();
    // The worker's RSS from turn 10 (warm) to the end.
    const pid = worker.process.pid!;
    let rssFrom = 0;
    await waitUntil('turn 10', async () => (await listEvents(infra.db, String(runId))).filter((e) => e.type === 'turn_started').length >= 10, children, 120_000);
    rssFrom = rssMb(pid);
    const sampler = sampleRss(pid, 500);
    let run: Json;
    do {
      assertAlive(children);
      run = await call(`${api}/v1/runs/${String(runId)}?waitMs=30000`, 'GET');
    } while (run.status === 'running');
    const engineMs = performance.now() - t0;
    const peak = sampler.stop();
    const rssEnd = rssMb(pid);
    const calls = run.toolCalls as { status: string }[] | undefined;
    if (run.status !== 'completed' || run.output !== 'done' || run.turns !== TURNS) {
      throw new Error(`the engine run ended ${String(run.status)} after ${String(run.turns)} turns: ${JSON.stringify(run.error ?? run.output).slice(0, 300)}`);
    }
    const floorMs = await floor;

    const engineStarts = (await listEvents(infra.db, String(runId))).filter((e) => e.type === 'turn_started').map((e) => Date.parse(e.createdAt));
    const history = await infra.client.workflow.getHandle(floorId).fetchHistory();
    const floorStarts = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'floorLlmTurn')
      .map((e) => Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6));
    if (engineStarts.length !== TURNS || floorStarts.length !== TURNS) throw new Error(`turn starts: engine ${engineStarts.length}, floor ${floorStarts.length}, not ${TURNS}`);
    const e = growth(turnTimes(engineStarts));
    const f = growth(turnTimes(floorStarts));
    const ms = (x: number) => `${x.toFixed(0)} ms`;
    const row = (label: string, value: string, target: string) => console.log(`${label.padEnd(52)} ${value.padEnd(58)} ${target}`);
    row('figure', 'measured', 'target');
    row('median turn, last 50 against turns 11–60', `engine ${ms(e.late)} / ${ms(e.early)}: ${(e.late / e.early).toFixed(3)}×`, '≤ 1.15×');
    row('  the floor, the same', `${ms(f.late)} / ${ms(f.early)}: ${(f.late / f.early).toFixed(3)}×`, '');
    row('whole run against the floor\'s', `engine ${(engineMs / 1000).toFixed(1)} s, floor ${(floorMs / 1000).toFixed(1)} s: ${(engineMs / floorMs).toFixed(3)}×`, '≤ 1.3×');
    row('worker RSS, turn 10 → end (peak)', `${rssFrom.toFixed(0)} → ${rssEnd.toFixed(0)} MB (peak ${peak.toFixed(0)}): ${rssEnd >= rssFrom ? '+' : '−'}${Math.abs(rssEnd - rssFrom).toFixed(0)} MB`, '≤ +50 MB');
    console.log(`\n${calls?.length ?? 0} tool calls, all ${calls?.every((c) => c.status === 'ok') ? 'ok' : 'NOT ok'}; load average ${os.loadavg()[0].toFixed(2)} at the end`);
    if (!calls || calls.length !== TURNS - 1 || calls.some((c) => c.status !== 'ok')) process.exitCode = 1;
  } catch (err) {
    reportExited(children);
    throw err;
  } finally {
    await stopChildren(children);
    await infra.close();
  }
}

runBench('bench:long', main);
