import { createScriptedProvider } from '../../llm/scripted';
import { startBenchInfra } from './bench-stack';
import { median, percentile } from './load-processes';
import { alternatingRounds } from './paired-rounds';
import { sampleFor } from './sampler-process';
import { benchKeys, inLanes, keyedApi, line, ms, oneTurnAgent, p50p99, type KeyedApi } from './tenant-bench-support';
import { startWorkerAndApi } from './worker-and-api';

/**
 * bench:tenants, part "get": what authentication and tenant filtering add to `GET /v1/runs/:id`.
 * One engine (the worker and the API in this process), its runs really run by the worker; the
 * GETs are sent at a fixed rate by a process of their own (get-sampler.ts), in paired rounds:
 * API_KEY (a constant-time comparison, the tenant `default`) against a key issued to the tenant
 * `acme` (looked up by its SHA-256 in PostgreSQL, then cached).
 */

export interface GetOptions {
  databaseUrl?: string;
  rounds: number;
  seconds: number;
  rate: number;
  /** runs per side, read in turn */
  runs: number;
  settleMs: number;
}

const TASK_QUEUE = 'tenant-bench';

interface Side {
  label: string;
  key: string;
  ids: string[];
}

/** `n` runs of a one-turn agent, started with `api`'s key and waited for; each must have completed with its answer. */
async function completedRuns(api: KeyedApi, agentId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  await inLanes(Array.from({ length: n }, (_, i) => i), 8, async (i) => {
    const { id } = await api.post('/v1/runs', { agentId, input: `go ${i}` });
    let run: Record<string, unknown>;
    do run = (await api.get(`/v1/runs/${String(id)}?waitMs=30000`)).body; while (run.status === 'running');
    if (run.status !== 'completed' || run.output !== 'done') throw new Error(`run ${String(id)} ended ${String(run.status)}: ${JSON.stringify(run)}`);
    ids.push(String(id));
  });
  return ids;
}

/** The tenant `acme`, its `read run` key, an agent in each tenant and each tenant's runs. */
async function seed(url: string, runs: number): Promise<{ apiKey: Side; tenantKey: Side }> {
  const admin = keyedApi(url, benchKeys.adminApiKey);
  await admin.post('/v1/tenants', { name: 'acme' });
  const { key } = await admin.post('/v1/keys', { tenantId: 'acme', name: 'bench', roles: ['read', 'run'] });
  const asDefault = keyedApi(url, benchKeys.apiKey);
  const asAcme = keyedApi(url, String(key));
  const defaultAgent = await asDefault.post('/v1/agents', oneTurnAgent('bench'));
  // Agents are made by `manage`: the operator makes acme's, acting in it.
  const acmeAgent = await keyedApi(url, benchKeys.adminApiKey, 'acme').post('/v1/agents', oneTurnAgent('bench'));
  return {
    apiKey: { label: 'API_KEY', key: benchKeys.apiKey, ids: await completedRuns(asDefault, String(defaultAgent.id), runs) },
    tenantKey: { label: 'acme key', key: String(key), ids: await completedRuns(asAcme, String(acmeAgent.id), runs) },
  };
}

/**
 * Each key's first GET misses its cache (the issued key's SHA-256 lookup, each run's view): every
 * run is read with its side's key before the rounds, which begin with a warm-up round per side besides.
 */
async function warmUp(url: string, sides: Side[]): Promise<void> {
  for (const side of sides) {
    const api = keyedApi(url, side.key);
    for (const id of side.ids) {
      const { status, body } = await api.get(`/v1/runs/${id}`);
      if (status !== 200 || body.id !== id) throw new Error(`GET /v1/runs/${id} with the ${side.label} answered ${status}`);
    }
  }
}

/** Measures and prints part "get"; false when its criterion does not hold. */
export async function measureGet(o: GetOptions): Promise<boolean> {
  const infra = await startBenchInfra({ databaseUrl: o.databaseUrl });
  try {
    const { apiUrl } = await startWorkerAndApi(infra, TASK_QUEUE, { providers: { scripted: createScriptedProvider() } }, benchKeys);
    const { apiKey, tenantKey } = await seed(apiUrl, o.runs);
    await warmUp(apiUrl, [apiKey, tenantKey]);
    const round = (side: Side) => () => sampleFor({ url: apiUrl, rate: o.rate, key: side.key }, o.seconds, side.ids);
    const [tenantRounds, apiKeyRounds] = await alternatingRounds(round(tenantKey), round(apiKey), { rounds: o.rounds, settleMs: o.settleMs });
    const deltas = tenantRounds.map((t, i) => percentile(t, 99) - percentile(apiKeyRounds[i], 99));
    tenantRounds.forEach((t, i) => {
      const a = apiKeyRounds[i];
      line(`  round ${i + 1}`, `API_KEY p50 ${ms(percentile(a, 50))} p99 ${ms(percentile(a, 99))}; `
        + `acme key p50 ${ms(percentile(t, 50))} p99 ${ms(percentile(t, 99))}`, `Δp99 ${ms(deltas[i])}`);
    });
    line('  API_KEY, all rounds', p50p99(apiKeyRounds.flat()));
    line('  acme key, all rounds', p50p99(tenantRounds.flat()));
    const delta = median(deltas);
    const pooled = percentile(tenantRounds.flat(), 99) - percentile(apiKeyRounds.flat(), 99);
    // The p50s' difference is steadier than the p99s' on a busy machine: it says whether a p99 gap is the keys' or the machine's.
    const p50Delta = median(tenantRounds.map((t, i) => median(t) - median(apiKeyRounds[i])));
    line(
      `GET /v1/runs/:id at ${o.rate}/s, p99 acme key − API_KEY`,
      `${ms(delta)} (median of ${o.rounds} paired rounds; pooled ${ms(pooled)}; p50 ${ms(p50Delta)})`, '≤ 1 ms', delta <= 1,
    );
    return delta <= 1;
  } finally {
    await infra.close();
  }
}
