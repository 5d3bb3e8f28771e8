import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Files only this user can have written: what a process acts on (a pid it will signal) must not
 * come from another user on the machine.
 */

export class PrivateDirError extends Error {
  override name = 'PrivateDirError';
}

const myUid = () => process.getuid?.() ?? 0;
/** an ancestor may be root's (/tmp, /run) or ours; anyone else could rename what is inside it */
const trustedOwner = (uid: number) => uid === 0 || uid === myUid();

/**
 * Makes dir (and its missing parents) with mode 0700, and checks that it is this user's alone: not a
 * symbolic link, ours, no permission for group or others; and that no directory above it is another
 * user's or writable by others without the sticky bit (as /tmp has). Throws PrivateDirError saying what is wrong.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  const absolute = path.resolve(dir);
  await fs.mkdir(absolute, { recursive: true, mode: 0o700 });
  const problem = await dirProblem(absolute) ?? await ancestorProblem(path.dirname(absolute));
  if (problem) throw new PrivateDirError(problem);
}

async function dirProblem(dir: string): Promise<string | undefined> {
  const st = await fs.lstat(dir);
  if (st.isSymbolicLink()) return `${dir} is a symbolic link`;
  if (!st.isDirectory()) return `${dir} is not a directory`;
  if (st.uid !== myUid()) return `${dir} belongs to uid ${st.uid}, not to this user (uid ${myUid()})`;
  if ((st.mode & 0o077) !== 0) return `${dir} is open to group or others (mode ${(st.mode & 0o777).toString(8)})`;
  return undefined;
}

async function ancestorProblem(dir: string): Promise<string | undefined> {
  for (let current = dir; ; current = path.dirname(current)) {
    const link = await fs.lstat(current);
    if (link.isSymbolicLink() && !trustedOwner(link.uid)) return `${current} is a symbolic link of uid ${link.uid}`;
    const st = await fs.stat(current);
    if (!trustedOwner(st.uid)) return `${current} belongs to uid ${st.uid}, not to this user (uid ${myUid()}) or root`;
    if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) {
      return `${current} is writable by group or others (mode ${(st.mode & 0o777).toString(8)})`;
    }
    if (current === path.dirname(current)) return undefined;
  }
}

/** Whether a file was written by this user (and is a plain file, not a link to one); undefined when there is no such file. */
export async function isOwnFile(file: string): Promise<boolean | undefined> {
  const st = await fs.lstat(file).catch(() => undefined);
  return st && st.isFile() && st.uid === myUid();
}

/** Writes text to a file readable only by this user: whole, under another name, then renamed, so that a reader never sees half of it. */
export async function writePrivateFile(file: string, text: string): Promise<void> {
  const partial = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  try {
    await fs.writeFile(partial, text, { mode: 0o600, flag: 'wx' });
    await fs.rename(partial, file);
  } catch (err) {
    await fs.rm(partial, { force: true });
    throw err;
  }
}
