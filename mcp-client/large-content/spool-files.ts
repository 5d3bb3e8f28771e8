import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ContentField, ContentSink } from './content-string';
import { ensurePrivateDir } from '../../platform/private-files';
import { Base64Stream } from './base64-stream';
import { spoolBegins, type LiveSpool } from './live-spools';

/**
 * Where the large contents of resources/read results wait on disk between the transport and the
 * resource activity (docs/data-sources.md, "Large resources"). Each worker process has a private
 * directory (0700) under one parent in the system's temp dir; file names are ours, never a server's.
 * A result carries a spooled content as a random token in place of its text or blob: the activity
 * claims the file by that token and removes it when the call ends. A token nobody claims soon after
 * its message arrived (its request timed out or was cancelled) has its file removed; the
 * directories of processes that are gone are removed when a worker starts, and its own when it stops.
 */

export interface SpooledContent {
  token: string;
  path: string;
  /** decoded size: UTF-8 bytes of the text, or the blob's bytes */
  bytes: number;
  field: ContentField;
}

export const SPOOL_PARENT = path.join(os.tmpdir(), `durable-agent-engine-spool-${process.getuid?.() ?? 0}`);
/** A token: base64-valid (it stands in a blob too) and unguessable, so a server cannot name a spool. */
const TOKEN = /^spool[0-9a-f]{27}$/;
const UNCLAIMED_MS = 60_000;

let directory: string | undefined;
const unclaimed = new Map<string, { content: SpooledContent; timer: NodeJS.Timeout }>();

/** Our directory, in a parent that must be this user's alone (another user could swap what is in it). */
function spoolDirectory(): string {
  if (!directory) {
    fs.mkdirSync(SPOOL_PARENT, { recursive: true, mode: 0o700 });
    const parent = fs.lstatSync(SPOOL_PARENT);
    if (!parent.isDirectory() || parent.uid !== (process.getuid?.() ?? 0) || (parent.mode & 0o077) !== 0) {
      throw new Error(`${SPOOL_PARENT} is not a directory of this user's alone`);
    }
    directory = fs.mkdtempSync(path.join(SPOOL_PARENT, `${process.pid}-`));
  }
  return directory;
}

function closeQuietly(fd: number): string | undefined {
  try {
    fs.closeSync(fd);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

const removeFile = (file: string) => fs.promises.rm(file, { force: true }).catch(() => undefined);
/** Within a transport's data handler: done before the next message is read. */
const removeFileNow = (file: string) => {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // the parent dir went: nothing left to remove
  }
};

/** The spooled content a result's text or blob stands for, now the caller's to release; undefined for any other value. */
export function claimSpooled(value: string): SpooledContent | undefined {
  if (!TOKEN.test(value)) return undefined;
  const entry = unclaimed.get(value);
  if (!entry) return undefined;
  clearTimeout(entry.timer);
  unclaimed.delete(value);
  return entry.content;
}

export const releaseSpooled = (content: SpooledContent): Promise<void> => removeFile(content.path);

function offer(content: SpooledContent): void {
  const timer = setTimeout(() => {
    unclaimed.delete(content.token);
    void removeFile(content.path);
  }, UNCLAIMED_MS);
  timer.unref();
  unclaimed.set(content.token, { content, timer });
}

/** Removes the spool directories of processes that no longer run (a crashed or killed worker's). */
export async function cleanSpoolLeftovers(): Promise<void> {
  await ensurePrivateDir(SPOOL_PARENT);
  const names = await fs.promises.readdir(SPOOL_PARENT).catch(() => [] as string[]);
  await Promise.all(names.map(async (name) => {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (!pid || pid === process.pid || alive(pid)) return;
    await fs.promises.rm(path.join(SPOOL_PARENT, name), { recursive: true, force: true }).catch(() => undefined);
  }));
}

/**
 * This process's directory, when the worker stops, if nothing is in it: a file still there is
 * another pool's of this process (tests run several), and a worker that starts later removes it.
 */
export async function removeSpoolDirectory(): Promise<void> {
  const dir = directory;
  directory = undefined;
  if (dir) await fs.promises.rmdir(dir).catch(() => undefined);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The spool files of one message: each large content string in a file of its own, their decoded
 * bytes together bounded by `maxBytes` (past it nothing more is written and the message is `overBound`).
 */
export class MessageSpools implements ContentSink {
  overBound = false;
  /** why a spool file could not be written (no room on the disk, a directory refused); nothing more is written */
  failure: string | undefined;
  private bytes = 0;
  private done: SpooledContent[] = [];
  private current: { content: SpooledContent; fd: number; base64?: Base64Stream; live?: LiveSpool } | undefined;

  constructor(private readonly maxBytes: number) {}

  begin(field: ContentField): void {
    if (this.overBound || this.failure) return;
    const token = `spool${randomBytes(14).toString('hex').slice(0, 27)}`;
    try {
      const file = path.join(spoolDirectory(), `${token}.${field === 'blob' ? 'bin' : 'txt'}`);
      const content: SpooledContent = { token, path: file, bytes: 0, field };
      const current: NonNullable<MessageSpools['current']> = { content, fd: fs.openSync(file, 'wx', 0o600) };
      if (field === 'blob') current.base64 = new Base64Stream((bytes) => this.append(bytes));
      else current.live = spoolBegins(token, file);
      this.current = current;
    } catch (err) {
      this.failure = (err as Error).message;
    }
  }

  write(bytes: Buffer): void {
    if (!this.current) return;
    if (this.current.base64) this.current.base64.push(bytes);
    else this.append(bytes);
  }

  end(): string {
    const current = this.current;
    if (!current) return '';
    current.base64?.end();
    this.failure ??= closeQuietly(current.fd);
    this.current = undefined;
    if (current.base64?.invalid) {
      removeFileNow(current.content.path);
      // An invalid blob stays invalid, so that the SDK refuses the result as it would have.
      return '!';
    }
    current.live?.ended(this.failure ? 'gone' : 'complete');
    this.done.push(current.content);
    return current.content.token;
  }

  abort(): void {
    const current = this.current;
    if (!current) return;
    closeQuietly(current.fd);
    current.live?.ended('gone');
    removeFileNow(current.content.path);
    this.current = undefined;
  }

  /** The message arrived whole: its spools may be claimed. */
  offer(): void {
    for (const content of this.done) offer(content);
    this.done = [];
  }

  /** The message is not passed on: its files go. */
  discard(): void {
    this.abort();
    for (const content of this.done) removeFileNow(content.path);
    this.done = [];
  }

  private append(bytes: Buffer): void {
    const current = this.current;
    if (!current) return;
    if (this.bytes + bytes.length > this.maxBytes) {
      this.overBound = true;
      this.abort();
      return;
    }
    this.bytes += bytes.length;
    current.content.bytes += bytes.length;
    try {
      for (let written = 0; written < bytes.length;) written += fs.writeSync(current.fd, bytes, written);
      current.live?.grew(current.content.bytes);
    } catch (err) {
      // Within a transport's data handler: thrown on, it would end the worker.
      this.failure = (err as Error).message;
      this.abort();
    }
  }
}
