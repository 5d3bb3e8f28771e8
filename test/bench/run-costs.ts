import fs from 'node:fs';
import { minus, readCounters, type Counted, type PgCounts } from './capacity-meters';
import { descendantsOf, threadSwitches } from './load-processes';

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
  for (const { tid, switches } of threadSwitches(pid)) {
    let comm: string;
    try {
      comm = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // it exited meanwhile
    }
    add(tid === String(pid) ? 'main' : /^tokio/i.test(comm) ? 'tokio (Temporal SDK)' : comm.replace(/[-_ ]*\d+$/, '') || 'unnamed', switches);
  }
  for (const child of descendantsOf(pid)) add('children', threadSwitches(child).reduce((n, t) => n + t.switches, 0));
  return out;
}

/** The counters of `counted` and the thread wakeups of every process in `threads` (name → pid). */
export async function readCosts(counted: Counted[], threads: Record<string, number>): Promise<CostReading> {
  const wakeups = Object.fromEntries(Object.entries(threads).map(([name, pid]) => [name, threadWakeups(pid)]));
  return { counts: await readCounters(counted), threads: wakeups };
}

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
      into(this.statements[name] ??= {}, minus(a.byVerb, b?.byVerb ?? {}));
      into(this.notifications[name] ??= {}, minus(a.byChannel ?? {}, b?.byChannel ?? {}));
      into(this.timers, { [name]: (a.timers ?? 0) - (b?.timers ?? 0) });
    }
    for (const [name, a] of Object.entries(after.threads)) into(this.threads[name] ??= {}, minus(a, before.threads[name] ?? {}));
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
