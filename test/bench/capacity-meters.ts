import fs from 'node:fs';
import pg from 'pg';
import type { Db } from '../../store/pool';
import { readParts, type CpuGroups } from './load-processes';

/**
 * What `npm run bench:capacity` reads before and after each run shape (capacity-bench.ts): every
 * figure a counter or a size, so that the difference of two readings is what the shape's runs cost.
 *  - CPU seconds by part, from /proc (load-processes.ts: readParts);
 *  - statements sent and notifications received by the API and the worker, from the counter
 *    preloaded into each (pg-statement-counter.js);
 *  - the engine database's transactions and rows (pg_stat_database, pg_stat_user_tables), its size
 *    on disk (pg_total_relation_size: tables, their indexes and TOAST) and the bytes its rows hold
 *    (pg_column_size), and the server's WAL position (pg_current_wal_lsn: the whole server's, all
 *    databases, whoever writes them);
 *  - NOTIFYs sent on the engine's channels, as one more LISTENing connection receives them.
 */

export interface Reading {
  cpu: CpuGroups;
  counters: Record<string, PgCounts>;
  db: Record<string, number>;
  tables: Record<string, TableFigures>;
  walBytes: number;
  notifies: Record<string, number>;
  /** with a Temporal server on the same PostgreSQL: its databases' figures, summed (size as pg_database_size) */
  temporalDb?: Record<string, number>;
}

export interface PgCounts {
  statements: number; byVerb: Record<string, number>; notifications: number; snapshots: number;
  byChannel?: Record<string, number>; timers?: number; timersBy?: Record<string, number>;
}

export interface TableFigures { sizeBytes: number; rowBytes: number; inserted: number; updated: number; deleted: number }

/** A process with the counter preloaded: its pid and the file it writes its counts to. */
export interface Counted { name: string; pid: number; file: string }

/** The node arguments and environment that preload the counter into a process writing to `file`. */
export function counterArgs(file: string): { nodeArgs: string[]; env: Record<string, string> } {
  return { nodeArgs: ['--require', require.resolve('./pg-statement-counter.js')], env: { PG_COUNTER_FILE: file } };
}

/** Asks each counted process for its counts (SIGUSR2) and waits until it has written them. */
export async function readCounters(processes: Counted[]): Promise<Record<string, PgCounts>> {
  const read = (c: Counted): PgCounts | undefined => {
    try {
      return JSON.parse(fs.readFileSync(c.file, 'utf8')) as PgCounts;
    } catch {
      return undefined; // not written yet
    }
  };
  const out: Record<string, PgCounts> = {};
  await Promise.all(processes.map(async (c) => {
    const before = read(c)?.snapshots ?? 0;
    process.kill(c.pid, 'SIGUSR2');
    const deadline = Date.now() + 10_000;
    for (;;) {
      const now = read(c);
      if (now && now.snapshots > before) return void (out[c.name] = now);
      if (Date.now() > deadline) throw new Error(`the ${c.name} process did not write its statement counts to ${c.file}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }));
  return out;
}

const DATABASE_FIGURES = `xact_commit + xact_rollback AS transactions, tup_inserted AS inserted, tup_updated AS updated,
  tup_deleted AS deleted, tup_returned + tup_fetched AS read, blks_read + blks_hit AS blocks, pg_database_size(datid) AS size`;

/** pg_stat_database's counters of `databases` summed, and the server's WAL position in bytes. */
async function readDatabases(admin: Db, databases: string[]): Promise<{ db: Record<string, number>; walBytes: number }> {
  const { rows } = await admin.query<Record<string, string>>(
    `SELECT ${DATABASE_FIGURES}, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') AS wal FROM pg_stat_database WHERE datname = ANY($1)`, [databases]);
  const db: Record<string, number> = {};
  for (const { wal: _wal, ...row } of rows) for (const [k, v] of Object.entries(row)) db[k] = (db[k] ?? 0) + Number(v);
  return { db, walBytes: Number(rows[0]?.wal ?? 0) };
}

/** Per table of the engine's database: its size on disk, the bytes its rows hold, and the rows written to it. */
async function readTables(db: Db): Promise<Record<string, TableFigures>> {
  const { rows } = await db.query<{ name: string; size: string; ins: string; upd: string; del: string }>(
    `SELECT relname AS name, pg_total_relation_size(relid) AS size, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del
       FROM pg_stat_user_tables WHERE schemaname = 'public'`);
  const out: Record<string, TableFigures> = {};
  for (const r of rows) {
    const bytes = await db.query<{ b: string | null }>(`SELECT sum(pg_column_size(t.*)) AS b FROM public."${r.name.replace(/"/g, '""')}" t`);
    out[r.name] = { sizeBytes: Number(r.size), rowBytes: Number(bytes.rows[0].b ?? 0), inserted: Number(r.ins), updated: Number(r.upd), deleted: Number(r.del) };
  }
  return out;
}

/** the engine's NOTIFY channels (store/runs/change-channels.ts) */
const CHANNELS = ['engine_run_event', 'engine_run_progress', 'engine_run_ended', 'engine_run_input', 'engine_run_text', 'engine_key_change'];

/** A connection of its own to the engine's database that LISTENs on every engine channel and counts what it receives, and its payload bytes. */
export async function notificationCounter(url: string): Promise<{ counts: Record<string, number>; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const counts: Record<string, number> = {};
  client.on('notification', (n) => {
    counts[n.channel] = (counts[n.channel] ?? 0) + 1;
    counts[`${n.channel} bytes`] = (counts[`${n.channel} bytes`] ?? 0) + Buffer.byteLength(n.payload ?? '');
  });
  for (const channel of CHANNELS) await client.query(`LISTEN ${channel}`);
  return { counts, close: () => client.end() };
}

export interface Meters {
  /** parts named by the pid of their process (its descendants count as its own) */
  parts: Record<string, number>;
  /** the process the Temporal dev server runs under (-1: none is counted) */
  temporalParent: number;
  /** each database whose backends count, and the part they count as */
  databaseParts: Record<string, string>;
  database: string;
  /** the databases of a Temporal server on the same PostgreSQL, if it runs there */
  temporalDatabases?: string[];
  counted: Counted[];
  /** the engine's database (the readings' own statements run there, after the CPU is read) */
  db: Db;
  /** a pool on another database of the same server: its backends are not counted as the engine's */
  admin: Db;
  notifies: Record<string, number>;
}

/**
 * One reading. The CPU is read last before a shape and first after it, so that the reading's own
 * statements (the table figures) fall outside the shape's CPU; the statements it counts are the engine processes'.
 */
export async function read(m: Meters, when: 'before' | 'after'): Promise<Reading> {
  const cpuNow = () => readParts(m.parts, m.temporalParent, m.databaseParts).cpu;
  const first = when === 'after' ? cpuNow() : undefined;
  const counters = await readCounters(m.counted);
  const { db, walBytes } = await readDatabases(m.admin, [m.database]);
  const temporalDb = m.temporalDatabases ? (await readDatabases(m.admin, m.temporalDatabases)).db : undefined;
  const tables = await readTables(m.db);
  return { cpu: first ?? cpuNow(), counters, db, walBytes, tables, notifies: { ...m.notifies }, ...(temporalDb ? { temporalDb } : {}) };
}

/** after − before, key by key, of two records of numbers */
export function minus(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));
}

/** The most connections the engine's database had at once, sampled every `everyMs` until stopped. */
export function connectionPeak(admin: Db, database: string, everyMs = 200): { stop(): Promise<number> } {
  let peak = 0;
  let sampling = Promise.resolve();
  const timer = setInterval(() => {
    sampling = admin.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1', [database])
      .then(({ rows }) => void (peak = Math.max(peak, Number(rows[0].n))), () => undefined);
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await sampling;
      return peak;
    },
  };
}
