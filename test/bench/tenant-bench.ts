import os from 'node:os';
import { loadConfig } from '../../platform/config';
import { measureGet } from './tenant-bench-get';
import { measureLists } from './tenant-bench-lists';
import { arg, listArg } from './bench-args';

/**
 * `npm run bench:tenants [-- --only=get,lists --rounds=5 --seconds=10 --rate=200 --runs=20 --tenants=100 --tenant-runs=100
 *   --list-rate=50 --list-seconds=4 --settle-ms=1000]`
 *
 * What tenancy costs, as the issue's criteria say:
 * - "get" (tenant-bench-get.ts): authentication and tenant filtering add ≤ 1 ms to the p99 of
 *   `GET /v1/runs/:id` at 200 requests/s, a tenant's issued key against API_KEY, in paired rounds;
 * - "lists" (tenant-bench-lists.ts): one tenant's `GET /v1/threads` and `GET /v1/runs` among 100
 *   tenants × 100 runs answer within 1.2× (p99) of the same lists on an engine with that tenant alone.
 * Each part starts its own Temporal dev server(s) and PostgreSQL (embedded, or a database of its
 * own on DATABASE_URL's server, dropped at the end), and stops them. Rounds alternate which side
 * goes first, after a warm-up round of each; a figure is the median of the rounds' paired
 * differences or ratios, so that the machine's drift between rounds cancels out.
 */

const ONLY = listArg('only') ?? ['get', 'lists'];

async function main(): Promise<void> {
  const { databaseUrl } = loadConfig();
  const rounds = arg('rounds', 5);
  const settleMs = arg('settle-ms', 1_000);
  const cpus = os.cpus();
  console.log(`\nbench:tenants: Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'CPU'}; `
    + `load average ${os.loadavg()[0].toFixed(2)} at start; database: ${databaseUrl ? 'DATABASE_URL' : 'embedded PostgreSQL'}\n`);
  let held = true;
  if (ONLY.includes('get')) {
    const o = { databaseUrl, rounds, settleMs, seconds: arg('seconds', 10), rate: arg('rate', 200), runs: arg('runs', 20) };
    console.log(`part get: ${o.runs} completed runs per tenant; ${o.rounds} paired rounds of ${o.seconds} s at ${o.rate} GET/s per side`);
    held = (await measureGet(o)) && held;
  }
  if (ONLY.includes('lists')) {
    const o = {
      databaseUrl, rounds, settleMs, tenants: arg('tenants', 100), runsPerTenant: arg('tenant-runs', 100),
      rate: arg('list-rate', 50), seconds: arg('list-seconds', 4),
    };
    console.log(`\npart lists: engine A ${o.tenants} tenants × ${o.runsPerTenant} runs, engine B the measured tenant's ${o.runsPerTenant}; `
      + `${o.rounds} paired rounds of ${o.seconds} s at ${o.rate} GET/s per side and list`);
    held = (await measureLists(o)) && held;
  }
  console.log(`\nload average ${os.loadavg()[0].toFixed(2)} at the end; ${held ? 'every criterion holds' : 'a criterion does not hold (FAIL above)'}`);
  if (!held) process.exitCode = 1;
}

// No process.exit(): the process ends by itself once everything started has been stopped.
main().catch((err: unknown) => {
  process.stderr.write(`bench:tenants failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
