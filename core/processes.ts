import fs from 'node:fs/promises';

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

/** Waits up to ms for pid to exit; true when it did. */
export async function waitForExit(pid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms && isAlive(pid); waited += 100) await new Promise((r) => setTimeout(r, 100));
  return !isAlive(pid);
}
