import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { waitFor } from './wait';

const ROOT = path.join(__dirname, '..', '..');

export interface Started { child: ChildProcess; output: () => string; exited: Promise<number | null> }

/** `npm start` as a user runs it, in its own process group like a terminal's foreground job. */
export function npmStart(env: Record<string, string>): Started {
  let output = '';
  const child = spawn('npm', ['start'], {
    cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Waits until `text` appears in the output; a failure quotes the output's end, which says why it did not. */
export async function waitForOutput(started: Started, text: string, ms: number, what: string): Promise<void> {
  await waitFor(async () => started.output().includes(text), ms, what)
    .catch((err: Error) => Promise.reject(new Error(`${err.message}; its output:\n${started.output().slice(-3000)}`)));
}

/** Ctrl-C: SIGINT to the whole foreground group. npm itself exits by the signal; the engine must stop cleanly within `ms`. */
export async function interrupt(started: Started, ms = 60_000): Promise<void> {
  process.kill(-started.child.pid!, 'SIGINT');
  await waitForOutput(started, 'stopped.', ms, 'the engine to stop');
  await waitFor(async () => !groupAlive(started.child.pid!), 10_000, 'the process group to exit');
}

/** Processes whose command line mentions the data dir: the dev server and PostgreSQL keep files there. */
export function processesUsing(dir: string): string[] {
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).flatMap((pid) => {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      return cmd.includes(dir) ? [`${pid} ${cmd}`] : [];
    } catch {
      return [];
    }
  });
}

export const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

/** After a failure only: what a crashed supervisor leaves (the dev server and PostgreSQL run in their own groups). */
export function killEverything(started: Started | undefined, dataDir: string): void {
  if (started && groupAlive(started.child.pid!)) process.kill(-started.child.pid!, 'SIGKILL');
  for (const line of processesUsing(dataDir)) process.kill(Number(line.split(' ')[0]), 'SIGKILL');
}
