import { RUN_WORKFLOW_TYPE } from '../../core/run';
import { writeRunEnd } from '../../store/runs/lifecycle';
import { findRun } from '../../store/runs/runs';
import { startBenchInfra, type BenchInfra } from './bench-stack';
import { median, percentile } from './load-processes';
import { alternatingRounds } from './paired-rounds';
import { sampleFor } from './sampler-process';
import { benchKeys, inLanes, keyedApi, line, oneTurnAgent, p50p99 } from './tenant-bench-support';
import { startBenchApi } from './worker-and-api';

/**
 * bench:tenants, part "lists": one tenant's `GET /v1/threads` (SQL) and `GET /v1/runs` (Temporal
 * visibility, by its TenantId search attribute) on engine A, which holds `tenants` tenants ×
 * `runsPerTenant` runs, against engine B, which holds that tenant's runs alone: each engine its
 * own Temporal dev server and its own database, and its API in this process; the GETs are sent by
 * a process of their own (get-sampler.ts) at a modest fixed rate, in paired rounds alternating A and B.
 *
 * What is real: the tenants, their agents and the measured tenant's `read` key (made through the
 * API, by the operator); every run's start (POST /v1/runs through the API: its thread and run rows,
 * its workflow with the same id, task queue and search attributes as any run's); its result and
 * its thread's messages (written by the statement that ends a run, store/runs/lifecycle.ts
 * writeRunEnd, as completed with the answer "done"). What is a shortcut: no worker polls the
 * engines' task queue, so no run executes; once its result is written, its workflow is terminated
 * (a closed execution in visibility, as a run that has ended), where a real run completes it.
 */

export interface ListOptions {
  databaseUrl?: string;
  tenants: number;
  runsPerTenant: number;
  rounds: number;
  /** GETs per second in a round, for `seconds` */
  rate: number;
  seconds: number;
  settleMs: number;
}

/** No worker polls it: the runs started there never execute. */
const TASK_QUEUE = 'tenant-bench-unpolled';
const SEED_CONCURRENCY = 16;

interface ListEngine {
  label: string;
  url: string;
  /** the measured tenant's key, with `read` alone */
  key: string;
}

/** One run, as the API records and starts it, then ended as completed and its workflow terminated. */
async function recordRun(infra: BenchInfra, url: string, tenant: string, agentId: string, i: number): Promise<void> {
  const input = `question ${i}`;
  const { id } = await keyedApi(url, benchKeys.adminApiKey, tenant).post('/v1/runs', { agentId, input });
  const run = await findRun(infra.db, String(id));
  if (!run) throw new Error(`run ${String(id)} was not recorded`);
  const answer = 'done';
  await writeRunEnd(infra.db, {
    runId: run.id, threadId: run.threadId, agentId: run.agentId, status: 'completed', stopReason: 'answer', output: answer, error: null,
    turns: 1, usage: { inputTokens: 10, outputTokens: 1 }, toolCalls: [], createdAt: run.createdAt,
  }, [{ role: 'user', content: input }, { role: 'assistant', content: answer }], {
    seq: 1, data: { status: 'completed', stopReason: 'answer', error: null },
  });
  await infra.client.workflow.getHandle(run.id).terminate('bench:tenants: recorded as completed');
}

/** Visibility is eventually consistent: waits until it lists every run as closed. */
async function untilVisible(infra: BenchInfra, total: number): Promise<void> {
  const query = `WorkflowType = '${RUN_WORKFLOW_TYPE}' AND ExecutionStatus = 'Terminated'`;
  const deadline = Date.now() + 300_000;
  for (let seen = 0; seen < total; seen = (await infra.client.workflow.count(query)).count) {
    if (Date.now() > deadline) throw new Error(`visibility lists ${seen} of ${total} runs after 5 minutes`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** An engine with `tenants` (each with an agent and `runsPerTenant` runs, made round-robin across tenants, as traffic interleaves). */
async function startListEngine(label: string, o: ListOptions, tenants: string[], measured: string, closers: (() => Promise<void>)[]) {
  const infra = await startBenchInfra({ databaseUrl: o.databaseUrl });
  closers.push(() => infra.close());
  const { apiUrl: url } = await startBenchApi(infra, TASK_QUEUE, benchKeys);
  const admin = keyedApi(url, benchKeys.adminApiKey);
  const agents = new Map<string, string>();
  for (const tenant of tenants) {
    await admin.post('/v1/tenants', { name: tenant });
    agents.set(tenant, String((await keyedApi(url, benchKeys.adminApiKey, tenant).post('/v1/agents', oneTurnAgent('support'))).id));
  }
  const { key } = await admin.post('/v1/keys', { tenantId: measured, name: 'bench reader', roles: ['read'] });
  const t = performance.now();
  const runs = Array.from({ length: o.runsPerTenant }, (_, i) => tenants.map((tenant) => ({ tenant, i }))).flat();
  await inLanes(runs, SEED_CONCURRENCY, ({ tenant, i }) => recordRun(infra, url, tenant, agents.get(tenant)!, i));
  await untilVisible(infra, runs.length);
  // A steady state: the bulk of writes above would otherwise wake autovacuum during the rounds.
  await infra.db.query('VACUUM (ANALYZE)');
  const seconds = (performance.now() - t) / 1000;
  line(`  engine ${label}: ${tenants.length} tenant(s) × ${o.runsPerTenant} runs`, `recorded and listed in ${seconds.toFixed(0)} s`);
  return { label, url, key: String(key) };
}

interface ListRoute {
  path: string;
  field: string;
  /** its default page size */
  pageSize: number;
}

/** Both lists' first page holds 20 items unless `limit` says otherwise (api/routes/thread-schemas.ts, run-list.ts). */
const ROUTES: ListRoute[] = [{ path: '/v1/threads', field: 'threads', pageSize: 20 }, { path: '/v1/runs', field: 'runs', pageSize: 20 }];

/** Paired rounds of one list on A and B; prints them, and the ratio of p99s; whether it holds. */
async function measureList(o: ListOptions, route: ListRoute, a: ListEngine, b: ListEngine): Promise<boolean> {
  const count = Math.min(route.pageSize, o.runsPerTenant);
  const round = (e: ListEngine) => () => sampleFor({ url: e.url, rate: o.rate, key: e.key, list: { path: route.path, field: route.field, count } }, o.seconds);
  const [onA, onB] = await alternatingRounds(round(a), round(b), { rounds: o.rounds, settleMs: o.settleMs });
  const ratios = onA.map((x, i) => percentile(x, 99) / percentile(onB[i], 99));
  line(`  ${route.path}, A rounds (p99)`, onA.map((x) => percentile(x, 99).toFixed(2)).join(' '));
  line(`  ${route.path}, B rounds (p99)`, onB.map((x) => percentile(x, 99).toFixed(2)).join(' '));
  line(`  ${route.path} on A, all rounds`, p50p99(onA.flat()));
  line(`  ${route.path} on B, all rounds`, p50p99(onB.flat()));
  const ratio = median(ratios);
  const p50Ratio = median(onA.map((x, i) => median(x) / median(onB[i])));
  line(
    `GET ${route.path} (first ${count}), p99 A/B`,
    `${ratio.toFixed(2)}× (median of ${o.rounds} paired rounds; p50 ${p50Ratio.toFixed(2)}×)`, '≤ 1.2×', ratio <= 1.2,
  );
  return ratio <= 1.2;
}

/** Measures and prints part "lists"; false when a criterion does not hold. */
export async function measureLists(o: ListOptions): Promise<boolean> {
  const tenants = Array.from({ length: o.tenants }, (_, i) => `t${String(i).padStart(3, '0')}`);
  const measured = tenants[Math.floor(tenants.length / 2)];
  const closers: (() => Promise<void>)[] = [];
  try {
    const a = await startListEngine('A', o, tenants, measured, closers);
    const b = await startListEngine('B', o, [measured], measured, closers);
    let held = true;
    for (const route of ROUTES) held = (await measureList(o, route, a, b)) && held;
    return held;
  } finally {
    for (const close of closers.reverse()) await close();
  }
}
