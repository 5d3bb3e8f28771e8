import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../core/ports';
import { testStack } from './support/stack-env';
import { waitFor } from './support/wait';

const ROOT = path.join(__dirname, '..');

interface Started { child: ChildProcess; output: () => string }

/** `npm start` as a user runs it, in its own process group like a terminal's foreground job. */
function npmStart(env: Record<string, string>): Started {
  let output = '';
  const child = spawn('npm', ['start'], {
    cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

/** Ctrl-C: SIGINT to the whole foreground group. npm itself exits by the signal; the engine must stop cleanly. */
async function interrupt(started: Started): Promise<void> {
  process.kill(-started.child.pid!, 'SIGINT');
  await waitFor(async () => started.output().includes('stopped.'), 60_000, 'the engine to stop')
    .catch((err: Error) => Promise.reject(new Error(`${err.message}; its output:\n${started.output().slice(-3000)}`)));
  await waitFor(async () => !groupAlive(started.child.pid!), 10_000, 'the process group to exit');
}

/** Processes whose command line mentions the data dir: the dev server and PostgreSQL keep files there. */
function processesUsing(dir: string): string[] {
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).flatMap((pid) => {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      return cmd.includes(dir) ? [`${pid} ${cmd}`] : [];
    } catch {
      return [];
    }
  });
}

const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm start', () => {
  const dataDir = path.join(testStack().tmpDir, 'npm-start');
  let started: Started | undefined;
  afterAll(async () => {
    // Only after a failure: what a crashed supervisor leaves (the dev server and PostgreSQL run in their own groups).
    if (started && groupAlive(started.child.pid!)) process.kill(-started.child.pid!, 'SIGKILL');
    for (const line of processesUsing(dataDir)) process.kill(Number(line.split(' ')[0]), 'SIGKILL');
  });

  test('runs the demo, stops cleanly on Ctrl-C, and serves earlier runs after a restart', async () => {
    const port = await freePort();
    const env = {
      DATA_DIR: dataDir, PORT: String(port), TEMPORAL_UI_PORT: String(await freePort()),
      TEMPORAL_CLI_PATH: testStack().temporalCliPath, TASK_QUEUE: `npm-start-${process.pid}`,
    };
    started = npmStart(env);
    await waitFor(async () => started!.output().includes('Press Ctrl-C to stop'), 90_000, 'the demo to finish');
    const out = started.output();
    expect(out).toContain(`API:              http://127.0.0.1:${port}`);
    expect(out).toMatch(/Temporal Web UI: {2}http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows/);
    expect(out).toMatch(/demo: +tool get_weather → error: A tool with the name get_weather was not found/);
    expect(out).toContain('demo: run completed (answer) after 2 turns');
    const runId = /demo: started run (run_\w+)/.exec(out)![1];

    await interrupt(started);
    expect(processesUsing(dataDir)).toEqual([]);

    started = npmStart(env);
    await waitFor(async () => started!.output().includes('Press Ctrl-C to stop'), 90_000, 'the second start');
    const res = await fetch(`http://127.0.0.1:${port}/v1/runs/${runId}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: runId, status: 'completed', stopReason: 'answer', turns: 2 });
    await interrupt(started);
    expect(started.output()).not.toMatch(/shutdown step failed/);
    expect(processesUsing(dataDir)).toEqual([]);
  });
});
