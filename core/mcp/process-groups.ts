import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../logger';
import { isAlive } from '../processes';

/**
 * A registry of the stdio servers' process groups, one small file per group.
 *
 * A worker killed with SIGKILL cannot stop its servers, and a server that ignores stdin EOF
 * (or a grandchild that never sees it, as under npx) would run forever. The next worker on
 * the machine reads the files of dead owners and kills those groups.
 */
export const DEFAULT_GROUPS_DIR = path.join(os.tmpdir(), 'agent-engine-mcp-groups');

interface GroupRecord {
  pgid: number;
  ownerPid: number;
  command: string;
}

const recordPath = (dir: string, pgid: number) => path.join(dir, `${pgid}.json`);

export async function registerGroup(dir: string, pgid: number, command: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const record: GroupRecord = { pgid, ownerPid: process.pid, command };
  await fs.writeFile(recordPath(dir, pgid), JSON.stringify(record));
}

export async function unregisterGroup(dir: string, pgid: number): Promise<void> {
  await fs.rm(recordPath(dir, pgid), { force: true });
}

export function groupAlive(pgid: number): boolean {
  return isAlive(-pgid);
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is already gone
  }
}

/** Kills the groups whose owning worker is gone. Groups of live workers (other processes on this machine) are left alone. */
export async function killLeftoverServerGroups(dir: string, logger: Logger): Promise<number> {
  const entries = await fs.readdir(dir).catch(() => [] as string[]);
  let killed = 0;
  for (const entry of entries.filter((e) => e.endsWith('.json'))) {
    const file = path.join(dir, entry);
    const record = await fs.readFile(file, 'utf8').then((t) => JSON.parse(t) as GroupRecord, () => undefined);
    if (!record || !Number.isInteger(record.pgid) || record.pgid <= 1) {
      await fs.rm(file, { force: true });
      continue;
    }
    // A live owner (this process, or another worker on the machine) still manages its group.
    if (isAlive(record.ownerPid)) continue;
    if (groupAlive(record.pgid)) {
      logger.warn({ pgid: record.pgid, command: record.command, ownerPid: record.ownerPid }, 'killing an MCP server group left by a dead worker');
      signalGroup(record.pgid, 'SIGKILL');
      killed++;
    }
    await fs.rm(file, { force: true });
  }
  return killed;
}
