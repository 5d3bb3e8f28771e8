import fs from 'node:fs';
import { readCounters, type Counted, type PgCounts } from './capacity-meters';

/**
 * What `npm run bench:load` prints per run beside CPU: the statements each engine process sent and
 * the notifications it received, from the counter preloaded into it (pg-statement-counter.js), and
 * each process's wakeups by cause where they can be told apart: its main thread, which runs the
 * JavaScript (notifications, statements' answers, timers, HTTP and MCP pipes all wake it), the
 * Temporal SDK's Rust threads (tokio: its polls and its gRPC), the other threads by their name
 * (V8's garbage collector and compiler, libuv's pool), and its child processes (the worker's stdio MCP servers), read from /proc/<pid>/task/<tid>/status.
 */

export type Figures = Record<string, number>;

export interface CostReading { counts: Record<string, PgCounts>; threads: Record<string, Figures> }

/** Voluntary context switches of a process's threads by kind, and of its descendants as `children`. */
export function threadWakeups(pid: number): Figures {
  const out: Figures = {};
  const add = (k: string, n: number) => void (out[k] = (out[k] ?? 0) + n);
  const switches = (p: number, tid: string) => {
    try {
      return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/task/${tid}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      return 0; // it exited meanwhile
    }
  };
  const tasks = (p: number) => {
    try {
      return fs.readdirSync(`/proc/${p}/task`);
    } catch {
      return [];
    }
  };
  for (const tid of tasks(pid)) {
    let comm: string;
    try {
      comm = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // it exited meanwhile
    }
    const kind = tid === String(pid) ? 'main' : /^tokio/i.test(comm) ? 'tokio (Temporal SDK)' : comm.replace(/[-_ ]*\d+$/, '') || 'unnamed';
    add(kind, switches(pid, tid));
  }
  for (const child of descendants(pid)) for (const tid of tasks(child)) add('children', switches(child, tid));
  return out;
}

function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // it exited meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parents) {
      if (parent !== p) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}

/** The counters of `counted` and the thread wakeups of every process in `threads` (name → pid). */
export async function readCosts(counted: Counted[], threads: Record<string, number>): Promise<CostReading> {
  const wakeups = Object.fromEntries(Object.entries(threads).map(([name, pid]) => [name, threadWakeups(pid)]));
  return { counts: await readCounters(counted), threads: wakeups };
}

const diff = (a: Figures, b: Figures = {}) => Object.fromEntries(Object.keys(a).map((k) => [k, a[k] - (b[k] ?? 0)]));

/** Sums of the differences of many before/after pairs, printed per run by `lines`. */
export class CostTotals {
  private readonly statements: Record<string, Figures> = {};
  private readonly notifications: Record<string, Figures> = {};
  private readonly timers: Figures = {};
  private readonly threads: Record<string, Figures> = {};

  add(before: CostReading, after: CostReading): void {
    const into = (to: Figures, from: Figures) => {
      for (const [k, v] of Object.entries(from)) to[k] = (to[k] ?? 0) + v;
    };
    for (const [name, a] of Object.entries(after.counts)) {
      const b = before.counts[name];
      into(this.statements[name] ??= {}, diff(a.byVerb, b?.byVerb));
      into(this.notifications[name] ??= {}, diff(a.byChannel ?? {}, b?.byChannel));
      into(this.timers, { [name]: (a.timers ?? 0) - (b?.timers ?? 0) });
    }
    for (const [name, a] of Object.entries(after.threads)) into(this.threads[name] ??= {}, diff(a, before.threads[name]));
  }

  lines(runs: number): string[] {
    const per = (n: number) => (n / runs).toFixed(1);
    const sum = (f: Figures) => Object.values(f).reduce((x, y) => x + y, 0);
    const list = (f: Figures) => Object.entries(f).filter(([, n]) => n / runs >= 0.05).sort((x, y) => y[1] - x[1])
      .map(([k, n]) => `${k} ${per(n)}`).join(', ');
    const each = (by: Record<string, Figures>) => Object.entries(by).map(([name, f]) => `${name} ${per(sum(f))} (${list(f) || 'none'})`).join('; ');
    return [
      `  statements per run (by first word): ${each(this.statements)}`,
      `  notifications received per run (by channel): ${each(this.notifications)}`,
      `  timers fired per run: ${list(this.timers)}`,
      `  wakeups per run by thread: ${each(this.threads)}`,
    ];
  }
}
