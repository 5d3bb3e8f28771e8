/**
 * npm run bench:csv — CSV files served by the fixture MCP server over stdio, each imported as the worker
 * does it, and the same file loaded by `psql \copy` into the same typed table, side by side:
 *   plain   1,000,000 rows × 8 columns, typed values, one quoted field per row;
 *   widened as plain, but a column's type widens on the last row (the file is read again);
 *   quoted  1,000,000 rows × 8 columns, quoted fields with commas, doubled quotes and newlines, a header to sanitise;
 *   wide    1,600 columns (PostgreSQL's limit).
 * Each file is retrieved by the retrieve_mcp_resource tool's own code, as a worker runs it (the MCP
 * transfer, the spool file, the scan and COPY). Prints the whole call's time, psql's, whole call speed /
 * psql speed (target ≥ 0.75), the server's answer alone (what no client can go below), and this
 * process's peak RSS over the whole call (it plays the worker; target ≤ 350 MiB). BENCH_ROWS scales
 * the row counts; BENCH_CASES picks cases (e.g. `plain,wide`).
 * Starts what it needs (a scratch database, fixture servers) and removes it at the end.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { resourceExecution } from '../../activities/tools/resource';
import type { ActivityDeps } from '../../activities/deps';
import type { ToolActivityInput } from '../../activities/tool-handler';
import type { DiscoveredIntegration } from '../../core/discovery';
import type { Integration } from '../../core/integration';
import { findDataSourceByUri } from '../../store/data-sources';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { migrate } from '../../store/migrations';
import { createPool, type Db } from '../../store/pool';
import { installSecretKeys } from '../../platform/secrets/key-ring';
import { keyRing, newSecretKey } from '../../platform/secrets/secret-box';
import { insertThread } from '../../store/threads/threads';
import { createLogger } from '../../platform/logger';
import { createMcpPool, type McpPool } from '../../mcp-client/connections/pool';

const URI = 'fixture://file.csv';
/** The fixture server, as a stdio integration and the bare client both start it. */
const FIXTURE_ARGS = ['--import', 'tsx', path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts')];
const discovered = (i: Integration): DiscoveredIntegration => ({
  id: i.id, name: i.name, status: 'ok', tools: [], resources: [{ uri: URI, name: 'file.csv', mimeType: 'text/csv' }], resourceTemplates: [], prompts: [],
});
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ROOT = path.join(__dirname, '..', '..');
const logger = createLogger(process.env.LOG_LEVEL ?? 'warn', 'bench');

const pad = (n: number) => String(n).padStart(2, '0');
const dayOf = (i: number) => `2024-${pad((i % 12) + 1)}-${pad((i % 28) + 1)}`;

interface BenchCase {
  name: string;
  rows: number;
  header: string;
  row: (i: number) => string;
}

const allCases: BenchCase[] = [
  {
    name: 'plain', rows: ROWS, header: 'id,account,amount,active,day,at,name,note',
    row: (i) => `${i},${3_000_000_000 + i},${(i % 10_000) / 100},${i % 2 === 0},${dayOf(i)},${dayOf(i)} ${pad(i % 24)}:30:00,name ${i},"note, ${i % 97}"`,
  },
  {
    // As plain, but `amount` is integer until the last row: the guess from the first MiB widens, and the file is read again.
    name: 'widened', rows: ROWS, header: 'id,account,amount,active,day,at,name,note',
    row: (i) => `${i},${3_000_000_000 + i},${i === ROWS ? '0.5' : i % 10_000},${i % 2 === 0},${dayOf(i)},${dayOf(i)} ${pad(i % 24)}:30:00,name ${i},"note, ${i % 97}"`,
  },
  {
    name: 'quoted', rows: ROWS,
    header: 'Order ID,"Customer Name",Select,"Notes (free text)",Montant (EUR),Année,"Paid?","order id"',
    row: (i) => `${i},"Smith, ${i % 1000}",${i % 3 === 0 ? '"x ""y"""' : 'plain'},"line one ${i}\nline two, ""quoted""",`
      + `${(i % 100_000) / 100},${dayOf(i)},${i % 5 === 0 ? 'TRUE' : 'false'},"${i % 7}-${i % 11}"`,
  },
  {
    // Half integers, half short texts: a row stays within PostgreSQL's 8 kB.
    name: 'wide', rows: Math.max(1, Math.round(ROWS / 250)),
    header: Array.from({ length: 1600 }, (_, c) => `Column ${c + 1}`).join(','),
    row: (i) => Array.from({ length: 1600 }, (_, c) => (c % 2 === 0 ? String((i * 31 + c) % 100_000) : `v${(i + c) % 100}`)).join(','),
  },
];
const cases = allCases.filter((c) => !process.env.BENCH_CASES || process.env.BENCH_CASES.split(',').includes(c.name));

function writeCsv(file: string, c: BenchCase): number {
  const fd = fs.openSync(file, 'w');
  let batch = `${c.header}\n`;
  for (let i = 1; i <= c.rows; i++) {
    batch += `${c.row(i)}\n`;
    if (batch.length > 1 << 20) {
      fs.writeSync(fd, batch);
      batch = '';
    }
  }
  fs.writeSync(fd, batch);
  fs.closeSync(fd);
  return fs.statSync(file).size;
}

/**
 * The server's side alone: the same resources/read over stdio to the same fixture server, its answer
 * read and dropped by a bare client (no parsing, no spool, no import). What the whole call cannot go
 * below: the server reading the file and writing its answer, and the pipe.
 */
async function serverAloneMs(file: string): Promise<number> {
  const server = spawn(process.execPath, FIXTURE_ARGS, {
    cwd: ROOT, env: { ...process.env, CSV_FILE: file }, stdio: ['pipe', 'pipe', 'inherit'],
  });
  let lineEnded: () => void = () => undefined;
  server.stdout.on('data', (chunk: Buffer) => {
    if (chunk.includes(0x0a)) lineEnded();
  });
  const answered = (request: object) => new Promise<void>((resolve) => {
    lineEnded = resolve;
    server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...request })}\n`);
  });
  try {
    await answered({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
    server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const started = Date.now();
    await answered({ id: 2, method: 'resources/read', params: { uri: URI } });
    return Date.now() - started;
  } finally {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill();
    await exited;
  }
}

/** The peak RSS from now on, exactly (Linux: clear_refs resets the high-water mark), or undefined. */
function startPeakRss(): () => number | undefined {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    return () => undefined;
  }
  return () => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024;
}

const seconds = (ms: number) => (ms / 1000).toFixed(2);
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** Returns the worker's peak RSS over the whole call. */
async function runCase(c: BenchCase, dir: string, db: Db, dbUrl: string, mcpPool: McpPool): Promise<number> {
  const file = path.join(dir, `${c.name}.csv`);
  const bytes = writeCsv(file, c);
  const width = c.header.split(',').length;
  console.log(`\n[${c.name}] ${c.rows} rows × ${width} columns, ${mib(bytes)} MiB; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const agent = await insertAgent(db, { name: `bench-${c.name}`, model: { provider: 'scripted', script: [] } });
  const thread = await insertThread(db, agent.id);
  const integration = await insertIntegration(db, {
    name: `bench-${c.name}`, toolTimeoutMs: 600_000,
    transport: {
      type: 'stdio', command: process.execPath, args: FIXTURE_ARGS,
      cwd: ROOT, env: { CSV_FILE: file },
    },
  });
  await mcpPool.withClient(integration, (client) => client.listResources());

  // The whole retrieve_mcp_resource call, as the worker makes it: the MCP transfer, the spool, the scan and COPY.
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the sweep frees pages in the background
  }
  const rssBefore = process.memoryUsage().rss;
  const peakRss = startPeakRss();
  let started = Date.now();
  const verdict = await resourceExecution.execute({ integration: discovered(integration), resolved: { uri: URI, known: true, listed: { name: 'file.csv', mimeType: 'text/csv' } } }, {
    input: { runId: `bench-${c.name}`, threadId: thread.id } as ToolActivityInput,
    deps: { db, logger, mcpPool } as unknown as ActivityDeps,
    log: logger, signal: new AbortController().signal, heartbeat: () => undefined,
  });
  const callMs = Date.now() - started;
  const callPeak = peakRss();
  if (verdict.status !== 'ok') throw new Error(verdict.content);
  const source = (await findDataSourceByUri(db, thread.id, URI))!;
  if (source.rowCount !== c.rows) throw new Error(`imported ${source.rowCount} rows, expected ${c.rows}`);

  const qualified = `"${source.schemaName}"."${source.tableName}"`;
  const copyTable = `public.psql_${c.name}`;
  await db.query(`CREATE TABLE ${copyTable} (LIKE ${qualified})`);
  started = Date.now();
  await promisify(execFile)('psql', [dbUrl, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy ${copyTable} FROM '${file}' WITH (FORMAT csv, HEADER true)`]);
  const psqlMs = Date.now() - started;
  const aloneMs = await serverAloneMs(file);
  // Both loaders must have read the same table (the generated files have no quoted empty cells, which psql keeps as '').
  const { rows: [diff] } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ((TABLE ${qualified} EXCEPT ALL TABLE ${copyTable}) UNION ALL (TABLE ${copyTable} EXCEPT ALL TABLE ${qualified})) d`);
  await db.query(`DROP TABLE ${copyTable}`);

  const types = source.columns.map((col) => `${col.name} ${col.type}`);
  console.log(`columns: ${types.length > 10 ? `${types.slice(0, 8).join(', ')}, … (${types.length})` : types.join(', ')}`);
  console.log(`retrieve_mcp_resource (resources/read over stdio, spool, scan + COPY, atomic): ${seconds(callMs)} s = ${Math.round(c.rows / (callMs / 1000))} rows/s, ${mib(bytes / (callMs / 1000))} MiB/s`);
  console.log(`psql \\copy of the same file into the same typed table: ${seconds(psqlMs)} s = ${Math.round(c.rows / (psqlMs / 1000))} rows/s`);
  console.log(`the server's answer alone, read and dropped by a bare stdio client: ${seconds(aloneMs)} s (${Math.round((100 * aloneMs) / callMs)} % of the whole call)`);
  console.log(`the server's answer alone + psql's load: ${seconds(aloneMs + psqlMs)} s, what the whole call would take if the answer arrived first and was then loaded at psql's speed`);
  console.log(`whole call speed / psql speed = ${(psqlMs / callMs).toFixed(2)}× (target ≥ 0.75); rows differing from psql's: ${diff.n}`);
  console.log(`RSS of this worker process: ${mib(rssBefore)} MiB before the call${gc ? ' (after a full GC)' : ''}, `
    + `peak during it ${callPeak ? `${mib(callPeak)} MiB` : 'unknown'} (target ≤ 350)`);
  return callPeak ?? 0;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csv-bench-'));
  const adminUrl = process.env.EXTERNAL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const dbName = `csv_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const db = createPool(url.toString(), logger);
  // A throwaway key for the throwaway database: the integration's env is stored sealed.
  installSecretKeys(keyRing(newSecretKey()));
  const mcpPool = createMcpPool({ logger, groupsDir: path.join(dir, 'groups') });
  try {
    await migrate(db);
    let peak = 0;
    for (const c of cases) peak = Math.max(peak, await runCase(c, dir, db, url.toString(), mcpPool));
    console.log(`\npeak RSS of this worker process over the calls (MCP transfers included): ${mib(peak)} MiB`);
  } finally {
    await mcpPool.closeAll();
    await db.end();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exitCode = 1;
});
