import { minus, type PgCounts, type Reading, type TableFigures } from './capacity-meters';
import type { TemporalFigures } from './capacity-temporal';
import type { CpuGroups } from './load-processes';

/**
 * The figures of `npm run bench:capacity` (capacity-bench.ts): the difference of two readings
 * (capacity-meters.ts) per run, net of what the engine's processes do when no run is under way
 * (the idle rate, measured once, times the window's length), printed per shape and as a table.
 */

export interface Window { before: Reading; after: Reading; seconds: number }

/** What the processes did per second with no run under way: CPU seconds and statements by part. */
export interface IdleRates { cpu: CpuGroups; statements: Record<string, number>; temporalDb?: Record<string, number> }

export function idleRates(w: Window): IdleRates {
  const statements = Object.fromEntries(Object.keys(w.after.counters).map((p) => [
    p, (w.after.counters[p].statements - (w.before.counters[p]?.statements ?? 0)) / w.seconds,
  ]));
  const rate = (after: Record<string, number>, before: Record<string, number>) => Object.fromEntries(
    Object.entries(minus(after, before)).map(([k, v]) => [k, v / w.seconds]));
  const { temporalDb: a } = w.after;
  const { temporalDb: b } = w.before;
  return { cpu: rate(w.after.cpu, w.before.cpu), statements, ...(a && b ? { temporalDb: rate(a, b) } : {}) };
}

export interface ShapeFigures {
  label: string;
  runs: number;
  runsPerS: number;
  /** CPU ms per run by part, net of the idle rate, and as measured */
  cpuMs: CpuGroups;
  cpuRawMs: CpuGroups;
  /** statements per run by process, net of the idle rate, and by first word (not net) */
  statements: Record<string, number>;
  verbs: Record<string, Record<string, number>>;
  /** notifications delivered to each process per run */
  delivered: Record<string, number>;
  transactions: number;
  notifies: Record<string, number>;
  rows: { inserted: number; updated: number; deleted: number };
  /** bytes per run: on disk (all the engine's tables, indexes and TOAST), held by rows, and by table */
  diskBytes: number;
  rowBytes: number;
  byTable: Record<string, { disk: number; rows: number; inserted: number }>;
  walBytes: number;
  temporal: TemporalFigures;
  /** a Temporal server's databases on the same PostgreSQL, per run: transactions, rows, growth in bytes */
  temporalDb?: Record<string, number>;
  peakConnections: number;
}

const perRun = (r: Record<string, number>, n: number) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v / n]));

function verbsOf(after: PgCounts, before: PgCounts | undefined, runs: number): Record<string, number> {
  return perRun(minus(after.byVerb, before?.byVerb ?? {}), runs);
}

function tableFigures(after: Record<string, TableFigures>, before: Record<string, TableFigures>, runs: number) {
  const byTable: ShapeFigures['byTable'] = {};
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? { sizeBytes: 0, rowBytes: 0, inserted: 0, updated: 0, deleted: 0 };
    byTable[name] = { disk: (a.sizeBytes - b.sizeBytes) / runs, rows: (a.rowBytes - b.rowBytes) / runs, inserted: (a.inserted - b.inserted) / runs };
  }
  const sum = (f: (t: TableFigures) => number) => (Object.values(after).reduce((s, t) => s + f(t), 0) - Object.values(before).reduce((s, t) => s + f(t), 0)) / runs;
  return {
    byTable, diskBytes: sum((t) => t.sizeBytes), rowBytes: sum((t) => t.rowBytes),
    rows: { inserted: sum((t) => t.inserted), updated: sum((t) => t.updated), deleted: sum((t) => t.deleted) },
  };
}

export function shapeFigures(
  label: string, w: Window, idle: IdleRates, runs: number, extra: { runsPerS: number; temporal: TemporalFigures; peakConnections: number },
): ShapeFigures {
  const cpu = minus(w.after.cpu, w.before.cpu);
  const cpuMs = Object.fromEntries(Object.entries(cpu).map(([k, s]) => [k, ((s - (idle.cpu[k] ?? 0) * w.seconds) * 1000) / runs]));
  const statements: Record<string, number> = {};
  const verbs: Record<string, Record<string, number>> = {};
  const delivered: Record<string, number> = {};
  for (const [p, a] of Object.entries(w.after.counters)) {
    const b = w.before.counters[p];
    statements[p] = (a.statements - (b?.statements ?? 0) - (idle.statements[p] ?? 0) * w.seconds) / runs;
    verbs[p] = verbsOf(a, b, runs);
    delivered[p] = (a.notifications - (b?.notifications ?? 0)) / runs;
  }
  const net = (after: Record<string, number>, before: Record<string, number>, rates: Record<string, number>) => Object.fromEntries(
    Object.entries(minus(after, before)).map(([k, v]) => [k, (v - (rates[k] ?? 0) * w.seconds) / runs]));
  const { temporalDb: a } = w.after;
  const { temporalDb: b } = w.before;
  return {
    label, runs, cpuMs, cpuRawMs: perRun(Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, v * 1000])), runs), statements, verbs, delivered, ...extra,
    // The bench's own statements in the window: the `before` reading of the tables (one per table, and the list).
    transactions: (w.after.db.transactions - w.before.db.transactions - 1 - Object.keys(w.before.tables).length) / runs,
    notifies: perRun(minus(w.after.notifies, w.before.notifies), runs),
    ...tableFigures(w.after.tables, w.before.tables, runs),
    walBytes: (w.after.walBytes - w.before.walBytes) / runs,
    ...(a && b ? { temporalDb: net(a, b, idle.temporalDb ?? {}) } : {}),
  };
}

const f1 = (x: number) => x.toFixed(1);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;
const list = (r: Record<string, number>, fmt = f1, min = 0.05) => Object.entries(r).filter(([, v]) => Math.abs(v) >= min)
  .sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${fmt(v)}`).join(', ');

export function printShape(s: ShapeFigures): void {
  const t = s.temporal;
  const per = (x: number) => x / s.runs;
  const total = Object.values(s.cpuMs).reduce((a, b) => a + b, 0);
  const notifyCounts = Object.fromEntries(Object.entries(s.notifies).filter(([k]) => !k.endsWith(' bytes')));
  const notifyBytes = Object.entries(s.notifies).filter(([k]) => k.endsWith(' bytes')).reduce((a, [, v]) => a + v, 0);
  console.log(`\n${s.label}: ${s.runs} runs, ${f1(s.runsPerS)} runs/s while they ran`);
  console.log(`  CPU ms per run, net of idle: ${list(s.cpuMs)}; total ${f1(total)} (as measured: ${list(s.cpuRawMs)})`);
  for (const p of Object.keys(s.statements)) console.log(`  statements per run, ${p}: ${f1(s.statements[p])} (${list(s.verbs[p])})`);
  console.log(`  transactions per run (pg_stat_database, the engine's database, less the bench's readings; autovacuum's too): ${f1(s.transactions)}`);
  console.log(`  NOTIFY per run (one more listener's count): ${list(notifyCounts)}; payload ${f1(notifyBytes)} B; delivered per run: ${list(s.delivered)}`);
  console.log(`  rows per run: inserted ${f1(s.rows.inserted)}, updated ${f1(s.rows.updated)}, deleted ${f1(s.rows.deleted)}`);
  console.log(`  bytes per run: on disk ${kb(s.diskBytes)}, in rows ${kb(s.rowBytes)}; WAL ${kb(s.walBytes)} (the whole server's: the engine's alone on the embedded PostgreSQL)`);
  const tables = Object.entries(s.byTable).filter(([, v]) => v.disk !== 0 || v.rows !== 0).sort((a, b) => b[1].disk - a[1].disk);
  console.log(`  by table (disk / rows bytes, rows inserted): ${tables.map(([k, v]) => `${k} ${v.disk.toFixed(0)}/${v.rows.toFixed(0)}/${f1(v.inserted)}`).join(', ')}`);
  console.log(`  Temporal per run: ${f1(per(t.workflows))} workflows (${list(t.workflowTypes, (v) => String(v))}), ${f1(per(t.events))} history events, `
    + `${kb(per(t.historyBytes))} history (server's historySizeBytes ${kb(per(t.serverHistoryBytes))}), ${f1(per(t.stateTransitions))} state transitions`
    + `${t.open > 0 ? `; ${t.open} still open` : ''}`);
  console.log(`  events per run: ${list(perRun(t.eventTypes, s.runs))}`);
  const d = s.temporalDb;
  if (d) {
    console.log(`  Temporal's PostgreSQL per run, net of idle (pg_stat_database of its two databases): transactions ${f1(d.transactions)}, rows inserted ${f1(d.inserted)}, `
      + `updated ${f1(d.updated)}, deleted ${f1(d.deleted)}; databases grew ${kb(d.size)}`);
  }
  console.log(`  peak connections to the engine's database: ${s.peakConnections}`);
}

/** One Markdown row per shape, for docs/capacity.md. */
export function printTable(shapes: ShapeFigures[]): void {
  const parts = ['API', 'worker', 'Temporal server', 'PostgreSQL', ...(shapes.some((s) => s.temporalDb) ? ['PostgreSQL (Temporal)'] : [])];
  console.log(`\n| shape | ${parts.map((p) => `CPU ms ${p}`).join(' | ')} | statements API / worker | NOTIFY | rows ins/upd | disk kB | row kB | WAL kB `
    + '| Temporal events | history kB | state transitions |');
  console.log(`|${' --- |'.repeat(parts.length + 10)}`);
  for (const s of shapes) {
    const t = s.temporal;
    const notify = Object.entries(s.notifies).filter(([k]) => !k.endsWith(' bytes')).reduce((a, [, v]) => a + v, 0);
    console.log(`| ${s.label} | ${parts.map((p) => f1(s.cpuMs[p] ?? 0)).join(' | ')} | ${f1(s.statements.API ?? 0)} / ${f1(s.statements.worker ?? 0)} `
      + `| ${f1(notify)} | ${f1(s.rows.inserted)} / ${f1(s.rows.updated)} | ${f1(s.diskBytes / 1024)} | ${f1(s.rowBytes / 1024)} | ${f1(s.walBytes / 1024)} `
      + `| ${f1(t.events / s.runs)} | ${f1(t.historyBytes / s.runs / 1024)} | ${f1(t.stateTransitions / s.runs)} |`);
  }
}
