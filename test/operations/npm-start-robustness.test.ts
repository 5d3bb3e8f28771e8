import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DataDirBusyError, lockDataDir } from '../../platform/data-dir-lock';
import { startEmbeddedPostgres } from '../../store/embedded-postgres';
import { freePort } from '../../platform/ports';
import { logger } from '../support/engine';
import { interrupt, killEverything, npmStart, processesUsing, waitForOutput, type Started } from '../support/npm-start';
import { testStack } from '../support/stack-env';
import { within } from '../support/wait';

const envFor = async (dataDir: string, port: number) => ({
  DATA_DIR: dataDir, PORT: String(port), TEMPORAL_UI_PORT: String(await freePort()),
  TEMPORAL_CLI_PATH: testStack().temporalCliPath, TASK_QUEUE: `robust-${process.pid}-${port}`,
});

describe('npm start on a shared data dir, and Ctrl-C', () => {
  const dataDir = path.join(testStack().tmpDir, 'shared-data-dir');
  let first: Started | undefined;
  let second: Started | undefined;
  afterAll(() => {
    killEverything(second, dataDir);
    killEverything(first, dataDir);
  });

  test('a second start on the same data dir says an engine runs there (PID, URL), exits non-zero, and leaves it alone', async () => {
    const port = await freePort();
    first = npmStart(await envFor(dataDir, port));
    await waitForOutput(first!, 'Press Ctrl-C to stop', 120_000, 'the first start');
    const runId = /demo: started run (run_\w+)/.exec(first.output())![1];

    second = npmStart(await envFor(dataDir, await freePort()));
    const code = await within(second.exited, 60_000, 'still running');
    expect(code).toBe(1);
    const said = /An engine is already running on the data dir (\S+): PID (\d+), API (\S+)\./.exec(second.output());
    expect(said?.slice(1)).toEqual([dataDir, expect.any(String), `http://127.0.0.1:${port}`]);
    const cmdline = await fs.readFile(`/proc/${said![2]}/cmdline`, 'utf8');
    expect(cmdline).toContain('dev/supervisor');
    expect(second.output()).not.toMatch(/left running by an earlier start|shutting down/);

    // The first engine still has its services.
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    const run = await fetch(`http://127.0.0.1:${port}/v1/runs/${runId}`);
    expect(run.status).toBe(200);

    const stopAt = Date.now();
    await interrupt(first, 15_000);
    expect(Date.now() - stopAt).toBeLessThan(15_000);
  }, 240_000);

  test('Ctrl-C right after the API is ready, with the demo run in flight, stops within 15 s and says "stopped."', async () => {
    first = npmStart(await envFor(dataDir, await freePort()));
    await waitForOutput(first!, 'demo: started run', 120_000, 'the demo run to start');
    const stopAt = Date.now();
    await interrupt(first, 15_000);
    expect(Date.now() - stopAt).toBeLessThan(15_000);
    expect(first.output()).not.toMatch(/shutdown step failed|did not finish in time/);
    expect(processesUsing(dataDir)).toEqual([]);
  }, 240_000);
});

describe('the data dir lock', () => {
  const dir = path.join(testStack().tmpDir, 'lock');
  const mark = `lock-holder-${process.pid}`;

  test('a live holder keeps it; a dead one, or a recycled PID of another program, does not', async () => {
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', mark], { stdio: 'ignore' });
    try {
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(path.join(dir, 'engine.lock'), JSON.stringify({ pid: holder.pid, url: 'http://127.0.0.1:1' }));
      await expect(lockDataDir(dir, mark)).rejects.toThrow(DataDirBusyError);
      await expect(lockDataDir(dir, mark)).rejects.toThrow(`PID ${holder.pid}, API http://127.0.0.1:1`);
      // The same PID is no holder when its command line is not a supervisor's.
      const other = await lockDataDir(dir, 'not-this-process');
      await other.release();
    } finally {
      holder.kill();
    }
    await fs.writeFile(path.join(dir, 'engine.lock'), JSON.stringify({ pid: 2 ** 22 + 1 }));
    const lock = await lockDataDir(dir, mark);
    expect(JSON.parse(await fs.readFile(path.join(dir, 'engine.lock'), 'utf8'))).toEqual({ pid: process.pid });
    await lock.setUrl('http://127.0.0.1:2');
    expect(JSON.parse(await fs.readFile(path.join(dir, 'engine.lock'), 'utf8'))).toEqual({ pid: process.pid, url: 'http://127.0.0.1:2' });
    await lock.release();
    await expect(fs.stat(path.join(dir, 'engine.lock'))).rejects.toThrow(/ENOENT/);
  });
});

describe('the embedded PostgreSQL and a data dir its OS user cannot reach', () => {
  test('as root, DATA_DIR inside a 0700 directory fails at once, naming the directory and the permission', async () => {
    const parent = await fs.mkdtemp(path.join(testStack().tmpDir, 'private-'));
    await fs.chmod(parent, 0o700);
    const dataDir = path.join(parent, 'data');
    const started = Date.now();
    const outcome = startEmbeddedPostgres({ dataDir, port: await freePort(), logger });
    if (process.getuid?.() === 0) {
      await expect(outcome).rejects.toThrow(`that user cannot enter ${parent} (mode 0700, owner uid 0) on the way to the data dir ${dataDir}. `
        + `Give it search permission (chmod o+x ${parent})`);
      expect(Date.now() - started).toBeLessThan(5_000);
      await expect(fs.stat(path.join(dataDir, 'postgres'))).rejects.toThrow(/ENOENT/);
      // With the permission the message asks for, it starts.
      await fs.chmod(parent, 0o701);
      const postgres = await startEmbeddedPostgres({ dataDir, port: await freePort(), logger });
      await postgres.stop();
    } else {
      // Not root: PostgreSQL runs as this user, who owns the directory.
      await (await outcome).stop();
    }
  }, 120_000);
});
