import fs from 'node:fs/promises';
import { setPriority } from 'node:os';
import type { Logger } from './logger';

/** Whether a process (or, with a negative id, a process group) exists. EPERM: it does, but is someone else's. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether pid is a live process whose command line mentions `mark` (a data dir, a subcommand).
 * A pid read from a file left by a killed predecessor may since belong to someone else.
 */
export async function isLeftover(pid: number, mark: string): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return false;
  const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.includes(mark);
}

/**
 * A process's group and start time (clock ticks after boot) from /proc/<pid>/stat, or undefined when
 * there is no such process (or no /proc). A pid and its start time together name one process: a pid
 * alone may since have been given to another.
 */
export async function readProcessStat(pid: number): Promise<{ pgrp: number; startTime: string } | undefined> {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // The command name (field 2) is in parentheses and may hold spaces and ')': fields are counted after the last ')'.
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (!fields || fields.length < 20) return undefined;
  return { pgrp: Number(fields[2]), startTime: fields[19] };
}

/** Waits up to ms for pid to exit; true when it did. */
export async function waitForExit(pid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms && isAlive(pid); waited += 100) await new Promise((r) => setTimeout(r, 100));
  return !isAlive(pid);
}

/**
 * `command args` to be run at niceness `nice` (0 to 19): through `nice -n`, so that every thread the
 * program starts has it from its first instruction (a renice after the start reaches only the
 * threads that exist by then). 0, or a platform without `nice`, runs the command as it is.
 */
export function niced(nice: number, command: string, args: string[]): { command: string; args: string[] } {
  if (nice <= 0 || process.platform === 'win32') return { command, args };
  return { command: 'nice', args: ['-n', String(nice), command, ...args] };
}

/**
 * Lowers this process's priority to niceness `nice` (WORKER_NICE; 0 leaves it): for throughput work
 * sharing a machine with work that answers people. The threads and processes it starts from now on
 * inherit it. Alone on its machine, or in a container, it changes nothing.
 */
export function lowerPriority(nice: number, logger: Logger): void {
  if (nice <= 0) return;
  try {
    setPriority(nice);
  } catch (err) {
    logger.warn({ err: (err as Error).message, nice }, 'could not lower this process\'s priority');
  }
}
