/**
 * npm run bench:csv — a 1M-row × 8-column CSV served by the fixture MCP server over stdio:
 * MCP transfer time, import rows/s, the same file through `psql \copy` into the same typed table,
 * and this process's peak RSS (it plays the worker: it holds the resource and runs the import).
 * Starts what it needs (a scratch database, the fixture server) and removes it at the end.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { importCsv } from '../../core/csv/import-csv';
import { insertAgent } from '../../core/db/agents';
import { insertIntegration } from '../../core/db/integrations';
import { migrate } from '../../core/db/migrations';
import { createPool } from '../../core/db/pool';
import { insertThread } from '../../core/db/threads';
import { createLogger } from '../../core/logger';
import { createMcpPool } from '../../core/mcp/pool';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ROOT = path.join(__dirname, '..', '..');
const logger = createLogger(process.env.LOG_LEVEL ?? 'warn', 'bench');

function writeCsv(file: string): number {
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, 'id,account,amount,active,day,at,name,note\n');
  let batch = '';
  for (let i = 1; i <= ROWS; i++) {
    const day = `2024-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`;
    batch += `${i},${3_000_000_000 + i},${(i % 10_000) / 100},${i % 2 === 0},${day},${day} ${String(i % 24).padStart(2, '0')}:30:00,name ${i},"note, ${i % 97}"\n`;
    if (batch.length > 1 << 20) {
      fs.writeSync(fd, batch);
      batch = '';
    }
  }
  fs.writeSync(fd, batch);
  fs.closeSync(fd);
  return fs.statSync(file).size;
}

const seconds = (ms: number) => (ms / 1000).toFixed(2);

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csv-bench-'));
  const file = path.join(dir, 'rows.csv');
  const adminUrl = process.env.EXTERNAL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const dbName = `csv_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const db = createPool(url.toString(), logger);
  const mcpPool = createMcpPool({ logger, groupsDir: path.join(dir, 'groups') });
  try {
    const bytes = writeCsv(file);
    console.log(`CSV: ${ROWS} rows × 8 columns, ${(bytes / 2 ** 20).toFixed(1)} MiB`);
    await migrate(db);
    const agent = await insertAgent(db, { name: 'bench', model: { provider: 'scripted', script: [] } });
    const thread = await insertThread(db, agent.id);
    const integration = await insertIntegration(db, {
      name: 'bench', toolTimeoutMs: 600_000,
      transport: {
        type: 'stdio', command: process.execPath, args: ['--import', 'tsx', path.join(ROOT, 'test/fixtures/mcp-fixture-server.ts')],
        cwd: ROOT, env: { CSV_FILE: file },
      },
    });
    await mcpPool.withClient(integration, (c) => c.listResources());

    let started = Date.now();
    const result = await mcpPool.withClient(integration, (c) => c.readResource({ uri: 'fixture://file.csv' }, { timeout: 600_000 }));
    const transferMs = Date.now() - started;
    const text = (result.contents[0] as { text: string }).text;

    started = Date.now();
    const source = await importCsv(db, { threadId: thread.id, uri: 'fixture://file.csv', integrationId: integration.id, text, bytes });
    const importMs = Date.now() - started;
    if (source.rowCount !== ROWS) throw new Error(`imported ${source.rowCount} rows, expected ${ROWS}`);

    const qualified = `"${source.schemaName}"."${source.tableName}"`;
    await db.query(`CREATE TABLE public.psql_copy (LIKE ${qualified})`);
    started = Date.now();
    await promisify(execFile)('psql', [url.toString(), '-v', 'ON_ERROR_STOP=1', '-c',
      `\\copy public.psql_copy FROM '${file}' WITH (FORMAT csv, HEADER true)`]);
    const psqlMs = Date.now() - started;

    console.log(`columns: ${source.columns.map((c) => `${c.name} ${c.type}`).join(', ')}`);
    console.log(`MCP transfer (resources/read over stdio): ${seconds(transferMs)} s`);
    console.log(`import (scan + COPY, atomic): ${seconds(importMs)} s = ${Math.round(ROWS / (importMs / 1000))} rows/s`);
    console.log(`psql \\copy of the same file into the same typed table: ${seconds(psqlMs)} s = ${Math.round(ROWS / (psqlMs / 1000))} rows/s; import/psql = ${(importMs / psqlMs).toFixed(2)}×`);
    console.log(`peak RSS of this worker process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
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
