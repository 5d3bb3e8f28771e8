import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** The processes of `npm run bench:load`, started as an operator starts them, and their figures. */

export const ROOT = path.join(__dirname, '..', '..');

export interface Child {
  name: string;
  process: ChildProcess;
  /** the last lines it wrote, shown when it fails */
  stderr: string[];
}

/**
 * `node dist/<entry>.js`, as the production image runs the API and the worker (Dockerfile), or with
 * `source` `node --import tsx <entry>.ts` (the bench's own floor worker); no npm wrapper processes in between.
 */
export function startNode(
  name: string, entry: string, options: { env?: Record<string, string>; args?: string[]; nodeArgs?: string[]; source?: boolean },
): Child {
  const script = options.source ? ['--import', 'tsx', entry] : [path.join('dist', entry.replace(/\.ts$/, '.js'))];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...script, ...(options.args ?? [])], {
    cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  // Logs (stdout) and errors (stderr) alike: the last lines say why a process died.
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr.push(...chunk.split('\n').filter(Boolean));
      stderr.splice(0, Math.max(0, stderr.length - 30));
    });
  }
  return { name, process: child, stderr };
}

export function assertAlive(children: Child[]): void {
  for (const c of children) {
    if (c.process.exitCode !== null || c.process.signalCode !== null) {
      throw new Error(`the ${c.name} process exited (${c.process.exitCode ?? c.process.signalCode}):\n${c.stderr.join('\n')}`);
    }
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
export async function stopChild(c: Child, graceMs = 30_000): Promise<void> {
  const p = c.process;
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  p.kill('SIGTERM');
  const timer = setTimeout(() => p.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export async function waitUntil(what: string, check: () => Promise<boolean>, children: Child[], timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    assertAlive(children);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: not ready within ${timeoutMs} ms`);
}

/** A worker is ready once it polls its task queue for workflow tasks. */
export async function hasPollers(client: Client, taskQueue: string): Promise<boolean> {
  const res = await client.workflowService.describeTaskQueue({
    namespace: 'default', taskQueue: { name: taskQueue }, taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (res.pollers?.length ?? 0) > 0;
}

/** Resident set size of one process, in MB (the MCP servers it spawned are processes of their own). */
export function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return kb / 1024;
}

/** Samples a process's RSS every `everyMs` until stopped; returns the peak. A process that exits stops the sampling. */
export function sampleRss(pid: number, everyMs = 100): { stop(): number } {
  let peak = rssMb(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid));
    } catch {
      clearInterval(timer);
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

/** Nearest-rank percentile of unsorted samples. */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const median = (xs: number[]) => percentile(xs, 50);

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user + system) of every process now, with its parent and name, from /proc. */
function readProcs(): Map<number, { ppid: number; comm: string; cpuS: number }> {
  const procs = new Map<number, { ppid: number; comm: string; cpuS: number }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      // fields[0] is the state (field 3); utime and stime are fields 14 and 15.
      procs.set(Number(entry), { ppid: Number(fields[1]), comm, cpuS: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS });
    } catch {
      // it exited meanwhile
    }
  }
  return procs;
}

export type CpuGroups = Record<string, number>;

/**
 * CPU seconds by part of the system: each named process with its descendants (the MCP servers a
 * worker spawned count as its own), the Temporal server started under `temporalParent`, and the
 * PostgreSQL backends serving `database` (others on the same server are not this run's; or, with a
 * record, the backends of each database named there, as the part it names); and, from
 * the same reading of /proc, each part's wakeups: the times its processes' threads went to sleep
 * and were woken (their voluntary context switches). Where a machine charges a process for each
 * wakeup (see wakeup-cost.ts), CPU figures follow the wakeups beside the work done.
 * Differences of two readings say where the time of a phase went.
 */
export function readParts(
  named: Record<string, number>, temporalParent: number, database: string | Record<string, string>,
): { cpu: CpuGroups; wakeups: CpuGroups } {
  const procs = readProcs();
  const parts = partsOf(procs, named, temporalParent, database);
  return { cpu: sumByPart(parts, (pid) => procs.get(pid)?.cpuS ?? 0), wakeups: sumByPart(parts, voluntarySwitches) };
}

function sumByPart(parts: Map<number, string>, figure: (pid: number) => number): CpuGroups {
  const groups: CpuGroups = {};
  for (const [pid, part] of parts) groups[part] = (groups[part] ?? 0) + figure(pid);
  return groups;
}

/** The voluntary context switches of all of a process's threads (0 once it exited). */
function voluntarySwitches(pid: number): number {
  return threadSwitches(pid).reduce((n, t) => n + t.switches, 0);
}

/** Each thread of a process and its voluntary context switches (none once it exited). */
export function threadSwitches(pid: number): { tid: string; switches: number }[] {
  const out: { tid: string; switches: number }[] = [];
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const status = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      out.push({ tid, switches: Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0) });
    }
  } catch {
    // it (or a thread) exited meanwhile
  }
  return out;
}

/** The processes descended from `pid` now (its children, theirs, …). */
export function descendantsOf(pid: number): number[] {
  const procs = readProcs();
  const below = (p: number): number[] => [...procs].filter(([, proc]) => proc.ppid === p).flatMap(([child]) => [child, ...below(child)]);
  return below(pid);
}

/** Which part each process belongs to (see readParts); processes of no part are left out. */
function partsOf(
  procs: ReturnType<typeof readProcs>, named: Record<string, number>, temporalParent: number, database: string | Record<string, string>,
): Map<number, string> {
  const databases = Object.entries(typeof database === 'string' ? { [database]: 'PostgreSQL' } : database);
  const ancestry = (pid: number): number[] => {
    const chain: number[] = [];
    for (let p = pid; p > 1 && chain.length < 20; p = procs.get(p)?.ppid ?? 0) chain.push(p);
    return chain;
  };
  const names = Object.entries(named);
  const parts = new Map<number, string>();
  for (const [pid, proc] of procs) {
    let part: string | undefined;
    if (proc.comm === 'postgres') {
      // A backend's title: "postgres: [<cluster>: ]<user> <database> <client> <state>".
      let title: string;
      try {
        title = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      } catch {
        continue; // a backend that ended since the listing: its time went with it
      }
      part = databases.find(([db]) => title.includes(` ${db} `))?.[1];
    } else if (proc.comm === 'temporal') {
      if (ancestry(pid).includes(temporalParent)) part = 'Temporal server';
    } else {
      for (const p of ancestry(pid)) {
        part = names.find(([, n]) => n === p)?.[0];
        if (part) break;
      }
    }
    if (part) parts.set(pid, part);
  }
  return parts;
}

export function cpuDelta(before: CpuGroups, after: CpuGroups): CpuGroups {
  return Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));
}

/** With a bench's failure: what each of its processes that had exited wrote, so that the failure says why. */
export function reportExited(children: Child[]): void {
  for (const c of children) {
    if (c.process.exitCode !== null || c.process.signalCode !== null) process.stderr.write(`${c.name} exited:\n${c.stderr.join('\n')}\n`);
  }
}

/** A bench's end: its processes stopped, newest first. */
export async function stopChildren(children: Child[]): Promise<void> {
  for (const c of [...children].reverse()) await stopChild(c);
}

/** Runs a bench's main. No process.exit(): the process ends by itself once everything started has been stopped. */
export function runBench(name: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
