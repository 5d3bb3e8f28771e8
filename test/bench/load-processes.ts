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

/** `node --import tsx <entry>`: what `npm run api` and `npm run worker` run, without npm's wrapper processes in between. */
export function startNode(name: string, entry: string, options: { env?: Record<string, string>; args?: string[]; nodeArgs?: string[] }): Child {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', entry, ...(options.args ?? [])], {
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
