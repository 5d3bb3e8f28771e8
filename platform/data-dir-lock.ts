import fs from 'node:fs/promises';
import path from 'node:path';
import { isLeftover } from './processes';

/**
 * One engine per data dir. The supervisor holds `engine.lock` (its PID, then its API's URL) while
 * it lives; a second start finds the holder alive and leaves it alone. Only a lock whose holder is
 * dead is taken over, and only then may the new start clean up what the dead one left running.
 */
export interface DataDirLock {
  /** records where the engine answers, for the message a second start prints */
  setUrl(url: string): Promise<void>;
  release(): Promise<void>;
}

export interface LockHolder { pid: number; url?: string }

export class DataDirBusyError extends Error {
  override name = 'DataDirBusyError';
  constructor(readonly dataDir: string, readonly holder: LockHolder) {
    super(`An engine is already running on the data dir ${dataDir}: PID ${holder.pid}`
      + `${holder.url ? `, API ${holder.url}` : ' (still starting)'}. `
      + `Stop it first (Ctrl-C in its terminal, or kill ${holder.pid}), or choose another DATA_DIR.`);
  }
}

const LOCK_FILE = 'engine.lock';
/** The holder's command line names this file: a recycled PID that belongs to another program is not a holder. */
export const SUPERVISOR_MARK = 'dev/supervisor';

async function readHolder(file: string): Promise<LockHolder | undefined> {
  const text = await fs.readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const holder = JSON.parse(text) as LockHolder;
    return Number.isInteger(holder.pid) ? holder : { pid: 0 };
  } catch {
    // Written half by a holder that died mid-write: nobody holds it.
    return { pid: 0 };
  }
}

export async function lockDataDir(dataDir: string, mark = SUPERVISOR_MARK): Promise<DataDirLock> {
  await fs.mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, LOCK_FILE);
  const write = (holder: LockHolder, flag: 'wx' | 'w') => fs.writeFile(file, JSON.stringify(holder), { flag });
  for (let attempt = 0; ; attempt++) {
    try {
      // O_EXCL: of two starts racing for a free data dir, exactly one creates the file.
      await write({ pid: process.pid }, 'wx');
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 2) throw err;
    }
    const holder = await readHolder(file);
    if (holder && holder.pid !== process.pid && (await isLeftover(holder.pid, mark))) throw new DataDirBusyError(dataDir, holder);
    await fs.rm(file, { force: true });
  }
  let url: string | undefined;
  return {
    async setUrl(value) {
      url = value;
      await write({ pid: process.pid, url }, 'w');
    },
    async release() {
      if ((await readHolder(file))?.pid === process.pid) await fs.rm(file, { force: true });
    },
  };
}
