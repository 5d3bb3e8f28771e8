import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../platform/logger';
import { ensurePrivateDir, isOwnFile, writePrivateFile } from '../../platform/private-files';
import { isAlive, readProcessStat } from '../../platform/processes';

/**
 * A registry of the stdio servers' process groups, one small file per group.
 *
 * A worker killed with SIGKILL cannot stop its servers, and a server that ignores stdin EOF
 * (or a grandchild that never sees it, as under npx) would run forever. The next worker on
 * the machine reads the records of dead workers and kills those groups.
 *
 * Killing is the danger: a sweep kills a group only when its record is this user's (the directory
 * is private, see platform/private-files.ts, and so is each record), the worker that wrote it is gone,
 * and the group's leader is still the process it started (same pid and start time: a pid, or a
 * group id, the system has given to another process since is never killed).
 */

/** This process's name in the records: a pid may come back for another process, this does not. */
const ENGINE_ID = randomBytes(8).toString('hex');

interface GroupRecord {
  engineId: string;
  ownerPid: number;
  /** null where /proc is not there to read it */
  ownerStartTime: string | null;
  pgid: number;
  leaderStartTime: string | null;
  command: string;
}

const recordPath = (dir: string, engineId: string, pgid: number) => path.join(dir, `${engineId}.${pgid}.json`);

let ownStartTime: Promise<string | null> | undefined;
const ownerStartTime = () => (ownStartTime ??= readProcessStat(process.pid).then((s) => s?.startTime ?? null));

export async function registerGroup(dir: string, pgid: number, command: string): Promise<void> {
  await ensurePrivateDir(dir);
  const leader = await readProcessStat(pgid);
  const record: GroupRecord = {
    engineId: ENGINE_ID,
    ownerPid: process.pid,
    ownerStartTime: await ownerStartTime(),
    pgid,
    leaderStartTime: leader?.startTime ?? null,
    command,
  };
  await writePrivateFile(recordPath(dir, ENGINE_ID, pgid), JSON.stringify(record));
}

export async function unregisterGroup(dir: string, pgid: number): Promise<void> {
  await fs.rm(recordPath(dir, ENGINE_ID, pgid), { force: true });
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

/**
 * Kills the groups whose owning worker is gone. Groups of live workers (other processes on this machine) are left alone.
 * Throws PrivateDirError when dir is not this user's alone.
 */
export async function killLeftoverServerGroups(dir: string, logger: Logger): Promise<number> {
  await ensurePrivateDir(dir);
  let killed = 0;
  for (const entry of await fs.readdir(dir)) {
    if (!entry.endsWith('.json') || entry.startsWith(`${ENGINE_ID}.`)) continue;
    const file = path.join(dir, entry);
    const own = await isOwnFile(file);
    // Gone since the listing: another worker's sweep took it.
    if (own === undefined) continue;
    if (!own) {
      logger.warn({ file }, 'removing a process-group record that is not a plain file of this user (another user wrote it): '
        + 'its group is not killed');
      await fs.rm(file, { force: true });
      continue;
    }
    const record = await readRecord(file);
    // Unreadable: a record being written by a writer that does not rename, or garbage; either way not a reason to kill.
    if (!record) continue;
    if (await ownerRuns(record)) continue;
    if (await leaderIsRecorded(record)) {
      const { pgid, command, ownerPid } = record;
      logger.warn({ pgid, command, ownerPid }, 'killing an MCP server group left by a dead worker');
      signalGroup(record.pgid, 'SIGKILL');
      killed++;
    }
    await fs.rm(file, { force: true });
  }
  return killed;
}

async function readRecord(file: string): Promise<GroupRecord | undefined> {
  let record: Partial<GroupRecord>;
  try {
    record = JSON.parse(await fs.readFile(file, 'utf8')) as Partial<GroupRecord>;
  } catch {
    return undefined;
  }
  const valid = Number.isInteger(record.pgid) && record.pgid! > 1 && Number.isInteger(record.ownerPid) && record.ownerPid! > 0;
  return valid ? record as GroupRecord : undefined;
}

/** Whether the worker that wrote the record still runs: its pid is alive and, where /proc tells, started when it did then. */
async function ownerRuns(record: GroupRecord): Promise<boolean> {
  if (record.ownerStartTime === null) return isAlive(record.ownerPid);
  return (await readProcessStat(record.ownerPid))?.startTime === record.ownerStartTime;
}

/** Whether the group's leader is the very process the record names. Without /proc this cannot be told, and nothing is killed. */
async function leaderIsRecorded(record: GroupRecord): Promise<boolean> {
  if (record.leaderStartTime === null) return false;
  const leader = await readProcessStat(record.pgid);
  return leader?.pgrp === record.pgid && leader.startTime === record.leaderStartTime;
}
