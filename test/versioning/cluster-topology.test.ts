import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { makeBuildCurrent } from '../../platform/temporal/deployments';
import { freePort } from '../../platform/ports';
import { startEngine, type Engine } from '../support/engine';
import { ROOT, exited, processesWith } from '../support/processes';
import { testStack } from '../support/stack-env';
import { clusterDescribe, startTemporalCluster, type TemporalCluster } from '../support/temporal-cluster';
import { waitFor } from '../support/wait';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const RUNS = 200;
/** How long each tool call takes once it has recorded itself: long enough for the kill to find calls mid-way. */
const TOOL_MS = 1_000;

interface RunView {
  status: string; output: string | null; version: { deployment: string; buildId: string } | null;
  toolCalls: { status: 'ok' | 'error'; result: string }[];
}

/**
 * The production topology on a real Temporal server (test/support/temporal-cluster.ts) rather than
 * the dev server: two API processes and two versioned worker processes of one build, on the
 * machine's PostgreSQL. 200 runs, started through both APIs, each call an MCP tool that records
 * the run's marker; one worker is SIGKILLed while calls are under way. Every run completes on the
 * build, and no tool call runs twice: a call the kill cut is not repeated (MCP tools get one
 * attempt), the LLM reads that it failed, and the run goes on.
 */
clusterDescribe('the production topology on a real Temporal server', () => {
  const tag = randomUUID().slice(0, 8);
  const version = { deploymentName: `topology-${tag}`, buildId: `build-${tag}` };
  /** on the command line of the MCP servers the workers start, to find any left behind */
  const serverMarker = `--marker=${randomUUID()}`;
  const dir = path.join(testStack().tmpDir, `cluster-topology-${tag}`);
  const children: ChildProcess[] = [];
  let cluster: TemporalCluster | undefined;
  let engine: Engine | undefined;
  let passed = false;

  beforeAll(async () => {
    cluster = await startTemporalCluster(dir);
    // The test's own client and pool: it writes the integration and agents, and makes the build current.
    engine = await startEngine('external', { worker: false, temporalAddress: cluster.address });
  }, 180_000);
  afterAll(async () => {
    // What the processes and the server said, for a test that failed.
    if (!passed && fs.existsSync(dir)) {
      for (const log of fs.readdirSync(dir).filter((f) => f.endsWith('.log'))) {
        process.stderr.write(`${log}, its end:\n${fs.readFileSync(path.join(dir, log), 'utf8').split('\n').slice(-30).join('\n')}\n`);
      }
    }
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(children.map(exited));
    for (const pid of processesWith(serverMarker)) process.kill(pid, 'SIGKILL');
    await engine?.close();
    await cluster?.stop();
  });

  /** `node --import tsx <script>` as an operator runs it, its output in a log file of the test's directory. */
  function spawnProcess(name: string, script: string, env: Record<string, string>): ChildProcess {
    const log = fs.openSync(path.join(dir, `${name}.log`), 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: ROOT, stdio: ['ignore', log, log],
      env: { ...process.env, DATABASE_URL: testStack().databases.external, TEMPORAL_ADDRESS: cluster!.address, TASK_QUEUE: engine!.taskQueue, LOG_LEVEL: 'warn', ...env },
    });
    fs.closeSync(log);
    children.push(child);
    return child;
  }

  async function call<T>(base: string, method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; json: T }> {
    const res = await fetch(`${base}${url}`, {
      method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as T };
  }

  test('two APIs and two versioned workers run 200 runs through a worker\'s SIGKILL: every run completes on the build, no tool call runs twice', async () => {
    const began = Date.now();
    const apis = await Promise.all([0, 1].map(async (n) => {
      const port = await freePort();
      spawnProcess(`api-${n}`, 'api/server.ts', { PORT: String(port), RATE_LIMIT_PER_MINUTE: '0' });
      return `http://127.0.0.1:${port}`;
    }));
    const workerEnv = { WORKFLOW_BUNDLE_PATH: testStack().workflowBundlePath, WORKER_DEPLOYMENT_NAME: version.deploymentName, WORKER_BUILD_ID: version.buildId };
    const workers = [spawnProcess('worker-0', 'worker/main.ts', workerEnv), spawnProcess('worker-1', 'worker/main.ts', workerEnv)];
    await makeBuildCurrent(engine!.client, version, { timeoutMs: 120_000 });
    for (const base of apis) await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 120_000, `${base} to be ready`);

    const recordFile = path.join(dir, 'records');
    fs.writeFileSync(recordFile, '');
    const integration = await insertIntegration(engine!.db, {
      name: `recorder_${tag}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, serverMarker], cwd: ROOT, env: { COUNT_FILE: recordFile } },
    });
    const markers = Array.from({ length: RUNS }, (_, i) => `run-${i}-${tag}`);
    // One at a time: the topology holds most of PostgreSQL's 100 connections already (the server's services, four pools of 10).
    const agents: { id: string }[] = [];
    for (const marker of markers) {
      agents.push(await insertAgent(engine!.db, {
        name: `topology_${marker}`, integrationIds: [integration.id],
        model: { provider: 'scripted', script: [
          { toolCalls: [{ name: `${integration.name}__record`, arguments: { marker, ms: TOOL_MS } }] },
          { text: '{{tool_results}}' },
        ] },
      }));
    }
    const readyAt = Date.now();

    // Runs start through the two APIs in turn, a few at a time.
    const abort = new AbortController();
    const runIds: string[] = [];
    let started = 0;
    const starters = Array.from({ length: 8 }, async (_, s) => {
      for (let i = s; i < RUNS && !abort.signal.aborted; i += 8) {
        const base = apis[i % 2];
        const thread = await call<{ id: string }>(base, 'POST', '/v1/threads', { agentId: agents[i].id });
        expect(thread).toMatchObject({ status: 201 });
        const run = await call<{ id: string }>(base, 'POST', `/v1/threads/${thread.json.id}/runs`, { input: 'record' });
        expect(run).toMatchObject({ status: 202 });
        runIds[i] = run.json.id;
        started++;
      }
    });

    // Once a third of the runs have started, the worker with the most tool calls inside the tool dies.
    const records = () => fs.readFileSync(recordFile, 'utf8').split('\n').filter(Boolean).map((line) => line.split(' '));
    /** a server's worker: the process that spawned it */
    const workerOf = new Map<string, number>();
    const parent = (pid: string) => {
      try {
        return Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      } catch {
        return 0; // a server gone already
      }
    };
    let victim: ChildProcess | undefined;
    let insideAtKill = 0;
    const unlessEnded = (check: () => Promise<boolean>) => async () => {
      if (abort.signal.aborted) throw new Error('the test failed meanwhile');
      return check();
    };
    const killer = (async () => {
      await waitFor(unlessEnded(async () => started >= RUNS / 3), 120_000, 'a third of the runs to start');
      await waitFor(unlessEnded(async () => {
        // Until the kill, every call that ended answered `recorded <marker>`.
        const { rows } = await engine!.db.query<{ result: string }>('SELECT result_preview AS result FROM run_tool_calls WHERE integration_id = $1', [integration.id]);
        const ended = new Set(rows.map((r) => r.result.replace(/^recorded /, '')));
        const inside = new Map<number, number>();
        for (const [, pid] of records().filter(([m]) => !ended.has(m))) {
          if (!workerOf.has(pid)) workerOf.set(pid, parent(pid));
          inside.set(workerOf.get(pid)!, (inside.get(workerOf.get(pid)!) ?? 0) + 1);
        }
        victim = workers.find((w) => (inside.get(w.pid!) ?? 0) >= 3);
        insideAtKill = inside.get(victim?.pid ?? -1) ?? 0;
        return victim !== undefined;
      }), 120_000, 'tool calls under way on a worker');
      victim!.kill('SIGKILL');
      await exited(victim!);
    })();
    let startedAt: number;
    try {
      await Promise.all(starters);
      startedAt = Date.now();
      await killer;
    } finally {
      abort.abort();
      await killer.catch(() => undefined);
    }

    // Every run ends; each is read through the other API than the one that started it.
    const views = await Promise.all(runIds.map(async (runId, i) => {
      const deadline = Date.now() + 300_000;
      for (;;) {
        const { json } = await call<RunView>(apis[(i + 1) % 2], 'GET', `/v1/runs/${runId}?waitMs=30000`);
        if (json.status !== 'running' || Date.now() > deadline) return json;
      }
    }));
    const endedAt = Date.now();

    expect(victim!.signalCode).toBe('SIGKILL');
    expect(views.map((v) => v.status)).toEqual(runIds.map(() => 'completed'));
    for (const v of views) expect(v.version).toEqual({ deployment: version.deploymentName, buildId: version.buildId });
    for (const v of views) expect(v.toolCalls).toHaveLength(1);

    // A tool call never runs twice: each marker is recorded once at most, and exactly once for a call that answered.
    const times = new Map<string, number>();
    for (const [m] of records()) times.set(m, (times.get(m) ?? 0) + 1);
    expect([...times].filter(([, n]) => n > 1)).toEqual([]);
    expect([...times.keys()].filter((m) => !markers.includes(m))).toEqual([]);
    const outcomes = views.map((v, i) => ({ marker: markers[i], status: v.toolCalls[0].status, output: v.output, times: times.get(markers[i]) ?? 0 }));
    const ok = outcomes.filter((o) => o.status === 'ok');
    const cut = outcomes.filter((o) => o.status === 'error');
    for (const o of ok) expect(o).toEqual({ ...o, output: `recorded ${o.marker}`, times: 1 });
    // A call cut by the kill: the LLM read that it failed (the activity's heartbeat timed out), and answered with that.
    for (const o of cut) expect(o.output).toMatch(/^MCP tool execution failed unexpectedly: .*heartbeat/i);
    // The kill found calls inside the tool: they ran once, and were not repeated.
    expect(cut.filter((o) => o.times === 1).length).toBeGreaterThanOrEqual(1);
    expect(ok.length).toBeGreaterThan(RUNS / 2);

    // The surviving processes stop cleanly; the servers of the dead worker are swept away, the others closed.
    const survivors = children.filter((c) => c !== victim);
    for (const c of survivors) c.kill('SIGTERM');
    await Promise.all(survivors.map(exited));
    expect(survivors.map((c) => c.exitCode)).toEqual(survivors.map(() => 0));
    await waitFor(async () => processesWith(serverMarker).length === 0, 30_000, 'no MCP server processes left');

    passed = true;
    const s = (ms: number) => `${Math.round(ms / 1000)} s`;
    process.stderr.write(`cluster topology: ${RUNS} runs; ${ok.length} calls ok, ${cut.length} cut by the kill (${cut.filter((o) => o.times === 1).length} inside the tool; `
      + `${insideAtKill} inside it at the kill); processes ready in ${s(readyAt - began)}, runs started in ${s(startedAt - readyAt)}, `
      + `all ended ${s(endedAt - readyAt)} after the first start\n`);
  }, 420_000);
});
