import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { testStack } from './stack-env';

export const ROOT = path.join(__dirname, '..', '..');

/** A stand-alone worker process (`npm run worker`), against the test stack. */
export function spawnWorker(env: Record<string, string>): ChildProcess {
  const stack = testStack();
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env, TEMPORAL_ADDRESS: stack.temporalAddress, WORKFLOW_BUNDLE_PATH: stack.workflowBundlePath,
      LOG_LEVEL: 'warn', ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', () => undefined);
  return child;
}

/** What `npm run api` runs, spawned directly so that SIGTERM reaches the server itself, as under an orchestrator. */
export function spawnApi(env: Record<string, string>): ChildProcess {
  const api = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
    cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn', ...env },
  });
  api.stderr?.on('data', () => undefined);
  return api;
}

export const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));

/** pids of the processes whose command line contains marker. */
export function processesWith(marker: string): number[] {
  return fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  }).map(Number);
}
