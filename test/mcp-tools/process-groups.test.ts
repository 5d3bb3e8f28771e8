import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../platform/config';
import { killLeftoverServerGroups, registerGroup } from '../../mcp-client/transports/process-groups';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { logger } from '../support/engine';
import { exited, ROOT } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const OWNER = path.join(ROOT, 'test', 'fixtures', 'group-owner.ts');
/** a uid no process of this test runs as: "another user" */
const OTHER_UID = 65534;

/** The start time of a process in clock ticks after boot (/proc/<pid>/stat, field 22), read here independently of the code under test. */
const startTimeOf = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
};
const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

const started: ChildProcess[] = [];
const groups: number[] = [];

/** A process group of this test's own: the kind of group a sweep must never kill unless it is a dead engine's. */
function spawnGroup(marker: string): ChildProcess {
  const child = spawn('sh', ['-c', `sleep 300 # ${marker}`], { detached: true, stdio: 'ignore' });
  groups.push(child.pid!);
  return child;
}

/** A pid that no process has now. */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await exited(child);
  return child.pid!;
}

/** Another engine on this machine: a process that starts one stdio server through the real transport, and records its group in dir. */
async function startEngineProcess(dir: string, marker: string): Promise<{ engine: ChildProcess; serverPid: number }> {
  const engine = spawn(process.execPath, ['--import', 'tsx', OWNER, dir, marker], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(engine);
  let stdout = '';
  let stderr = '';
  engine.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
  engine.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  await waitFor(async () => stdout.includes('\n') || engine.exitCode !== null, 30_000, `the engine process to start its server (${stderr})`);
  const serverPid = Number(stdout.trim());
  if (!serverPid) throw new Error(`the engine process failed: ${stderr}`);
  groups.push(serverPid);
  return { engine, serverPid };
}

const privateDir = () => fs.mkdtempSync(path.join(testStack().tmpDir, 'groups-'));
const plant = (dir: string, record: Record<string, unknown>) => {
  const file = path.join(dir, `${String(record.engineId)}.${String(record.pgid)}.json`);
  fs.writeFileSync(file, JSON.stringify(record));
  return file;
};

afterEach(async () => {
  for (const pgid of groups.splice(0)) if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited(child);
  }
});

describe('the MCP process-group registry', () => {
  test('a sweep kills the server group of an engine that was killed with SIGKILL, and leaves the groups of live engines', async () => {
    const dir = privateDir();
    const marker = `leftover-${randomUUID()}`;
    const dead = await startEngineProcess(dir, marker);
    const live = await startEngineProcess(dir, marker);
    dead.engine.kill('SIGKILL');
    await exited(dead.engine);
    expect(groupAlive(dead.serverPid)).toBe(true);

    expect(await killLeftoverServerGroups(dir, logger)).toBe(1);
    await waitFor(async () => !groupAlive(dead.serverPid), 5_000, 'the dead engine\'s server group to go');
    expect(groupAlive(live.serverPid)).toBe(true);
    // The live engine's record stays; the dead one's is gone with its group.
    const left = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(left).toHaveLength(1);
    expect(JSON.parse(fs.readFileSync(path.join(dir, left[0]), 'utf8'))).toMatchObject({ pgid: live.serverPid });
  });

  test('a record whose group id now names another process (its start time differs) kills nothing, and is dropped', async () => {
    const dir = privateDir();
    // A dead engine's record for a group id that the system has since given to an unrelated process.
    const unrelated = spawnGroup(`reused-${randomUUID()}`);
    await waitFor(async () => fs.existsSync(`/proc/${unrelated.pid}/stat`), 5_000, 'the process to start');
    const file = plant(dir, {
      engineId: 'gone', ownerPid: await deadPid(), ownerStartTime: '1', pgid: unrelated.pid,
      leaderStartTime: String(Number(startTimeOf(unrelated.pid!)) - 1), command: 'sh',
    });

    expect(await killLeftoverServerGroups(dir, logger)).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(groupAlive(unrelated.pid!)).toBe(true);
    expect(fs.existsSync(file)).toBe(false);
  });

  test('a record whose worker pid now names another live process counts as a dead worker\'s: its group is killed', async () => {
    const dir = privateDir();
    const orphan = spawnGroup(`orphan-${randomUUID()}`);
    await waitFor(async () => fs.existsSync(`/proc/${orphan.pid}/stat`), 5_000, 'the process to start');
    // The worker died; its pid went to a process that started later (here: this test's own process, with another start time).
    plant(dir, {
      engineId: 'recycled', ownerPid: process.pid, ownerStartTime: String(Number(startTimeOf(process.pid)) - 1),
      pgid: orphan.pid, leaderStartTime: startTimeOf(orphan.pid!), command: 'sh',
    });

    expect(await killLeftoverServerGroups(dir, logger)).toBe(1);
    await exited(orphan);
    expect(orphan.signalCode).toBe('SIGKILL');
  });

  test('a half-written record is taken as not yet written: the sweep neither kills nor deletes anything', async () => {
    const dir = privateDir();
    const group = spawnGroup(`half-${randomUUID()}`);
    const whole = JSON.stringify({ engineId: 'writing', ownerPid: await deadPid(), ownerStartTime: '1', pgid: group.pid, leaderStartTime: startTimeOf(group.pid!), command: 'sh' });
    const file = path.join(dir, `writing.${group.pid}.json`);
    fs.writeFileSync(file, whole.slice(0, whole.length / 2));

    expect(await killLeftoverServerGroups(dir, logger)).toBe(0);
    expect(groupAlive(group.pid!)).toBe(true);
    expect(fs.existsSync(file)).toBe(true);
  });

  test('a record is written whole: a reader racing the writes never finds it partial', async () => {
    const dir = privateDir();
    const group = spawnGroup(`whole-${randomUUID()}`);
    const file = () => fs.readdirSync(dir).find((f) => f.endsWith('.json'));
    let writing = true;
    let partial = 0;
    const reader = (async () => {
      while (writing) {
        const name = file();
        if (name) {
          const text = await fs.promises.readFile(path.join(dir, name), 'utf8').catch(() => undefined);
          if (text !== undefined) {
            try {
              JSON.parse(text);
            } catch {
              partial++;
            }
          }
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let i = 0; i < 300; i++) await registerGroup(dir, group.pid!, `sh ${'x'.repeat(20_000)}`);
    writing = false;
    await reader;
    expect(partial).toBe(0);
    // No temporary file is left behind.
    expect(fs.readdirSync(dir)).toHaveLength(1);
  });

  test('a record planted by another user kills nothing, even one naming a live group with its true start time', async () => {
    const dir = privateDir();
    const victim = spawnGroup(`victim-${randomUUID()}`);
    await waitFor(async () => fs.existsSync(`/proc/${victim.pid}/stat`), 5_000, 'the process to start');
    const file = plant(dir, {
      engineId: 'planted', ownerPid: await deadPid(), ownerStartTime: '1', pgid: victim.pid, leaderStartTime: startTimeOf(victim.pid!), command: 'sh',
    });
    fs.chownSync(file, OTHER_UID, OTHER_UID);

    expect(await killLeftoverServerGroups(dir, logger)).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(groupAlive(victim.pid!)).toBe(true);
    expect(fs.existsSync(file)).toBe(false);
  });

  test('a directory of another user, or one open to group or others, is refused with a clear error', async () => {
    const planted = privateDir();
    fs.chownSync(planted, OTHER_UID, OTHER_UID);
    await expect(startMcpPool(logger, { groupsDir: planted })).rejects.toThrow(`${planted} belongs to uid ${OTHER_UID}, not to this user (uid 0)`);

    const open = privateDir();
    fs.chmodSync(open, 0o755);
    await expect(startMcpPool(logger, { groupsDir: open })).rejects.toThrow(`${open} is open to group or others (mode 755)`);

    // The per-user directory of the default place, made beforehand by someone else: its subdirectory is not trusted either.
    const base = privateDir();
    fs.chownSync(base, OTHER_UID, OTHER_UID);
    await expect(startMcpPool(logger, { groupsDir: path.join(base, 'mcp-groups') })).rejects.toThrow(`${base} belongs to uid ${OTHER_UID}`);
    await expect(registerGroup(path.join(base, 'mcp-groups'), 1234, 'sh')).rejects.toThrow(`${base} belongs to uid ${OTHER_UID}`);

    const link = path.join(privateDir(), 'link');
    fs.symlinkSync(privateDir(), link);
    await expect(startMcpPool(logger, { groupsDir: link })).rejects.toThrow(`${link} is a symbolic link`);
  });

  test('the registry lives in a directory of this user: XDG_RUNTIME_DIR, else the temp dir under the uid', () => {
    expect(loadConfig({ XDG_RUNTIME_DIR: '/run/user/0' }).mcpGroupsDir).toBe('/run/user/0/agent-engine/mcp-groups');
    expect(loadConfig({}).mcpGroupsDir).toBe(path.join(os.tmpdir(), `agent-engine-${process.getuid!()}`, 'mcp-groups'));
    // The base directory spec's rule: a relative XDG_RUNTIME_DIR is ignored.
    expect(loadConfig({ XDG_RUNTIME_DIR: 'run' }).mcpGroupsDir).toBe(path.join(os.tmpdir(), `agent-engine-${process.getuid!()}`, 'mcp-groups'));
  });
});
