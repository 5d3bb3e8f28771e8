import { spawn, type ChildProcess } from 'node:child_process';
import { serializeMessage } from '@modelcontextprotocol/client';
import type { Transport, JSONRPCMessage } from '@modelcontextprotocol/client';
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import type { Logger } from '../../platform/logger';
import { LineBuffer } from './line-buffer';
import { groupAlive, registerGroup, signalGroup, unregisterGroup } from './process-groups';
import { shortened } from '../../core/truncated-text';

export interface StdioServerOptions {
  command: string;
  args?: string[];
  /** added to a minimal inherited environment (PATH, HOME, …), as the SDK's own stdio transport does */
  env?: Record<string, string>;
  cwd?: string;
  /** where the process-group registry lives (see process-groups.ts) */
  groupsDir: string;
  logger: Logger;
  /** how long a server gets after SIGTERM before its group is killed */
  killGraceMs?: number;
  /** bound on one message from the server; a longer one is answered with an error (see line-buffer.ts) */
  maxMessageBytes?: number;
  /**
   * bound on the decoded contents of a resources/read result, which go to spool files (see
   * mcp-client/large-content/spooling-message.ts)
   */
  maxContentBytes?: number;
}

/** Room for the SDK's own messages when no resource bound is given. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

const STDERR_LINE_LIMIT = 2000;

/**
 * The SDK's StdioClientTransport kills only the direct child. Servers started through npx,
 * uvx or a shell wrapper leave grandchildren behind, so we give each server its own process
 * group and signal the whole group.
 */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private readonly buffer: LineBuffer;
  private closed = false;
  private stderrTail = '';
  /** the group's record being written: removed only once written, or it would outlive the group */
  private registered: Promise<void> = Promise.resolve();

  constructor(private readonly options: StdioServerOptions) {
    this.buffer = new LineBuffer(options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES, options.maxContentBytes);
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Ours to log, never handed out. Its presence (with `pid`) is what tells the SDK's era probe this
   * is a stdio transport: a server that stays silent or exits is then a 2025 server, not an outage.
   */
  get stderr(): null {
    return null;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error('GroupStdioTransport already started');
    const { command, args = [], env, cwd, logger } = this.options;
    const child = spawn(command, args, {
      env: { ...getDefaultEnvironment(), ...env },
      cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      // A group of its own: a terminal's Ctrl-C does not reach it, and we can signal it as a whole.
      detached: true,
      shell: false,
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    this.registered = registerGroup(this.options.groupsDir, child.pid!, command).catch((err: Error) => {
      logger.warn({ err: err.message }, 'could not record an MCP server process group');
    });

    child.on('error', (err) => this.onerror?.(err));
    child.on('close', (code, signal) => {
      void this.unregister(child.pid!);
      if (!this.closed) logger.warn({ command, code, signal, stderr: this.stderrTail.slice(-500) }, 'MCP server exited');
      this.closed = true;
      this.onclose?.();
    });
    child.stdin!.on('error', (err) => this.onerror?.(err));
    child.stdout!.on('data', (chunk: Buffer) => {
      for (const message of this.buffer.push(chunk, (err) => this.onerror?.(err))) this.onmessage?.(message);
    });
    child.stdout!.on('error', (err) => this.onerror?.(err));
    let partial = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      // stdout is the protocol; the server's stderr is diagnostics, so it goes to our log (stderr).
      const text = partial + chunk.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop()!.slice(-STDERR_LINE_LIMIT);
      for (const line of lines) {
        if (line.trim()) logger.info({ command, pid: child.pid }, `mcp stderr: ${shortened(line, STDERR_LINE_LIMIT)}`);
      }
      this.stderrTail = (this.stderrTail + text).slice(-2000);
    });
    // Awaited after the handlers are on: a server that exits meanwhile is still seen to close.
    await this.registered;
  }

  private async unregister(pgid: number): Promise<void> {
    await this.registered;
    await unregisterGroup(this.options.groupsDir, pgid).catch(() => undefined);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.closed) throw new Error('Not connected');
    if (!stdin.write(serializeMessage(message))) await new Promise<void>((resolve) => stdin.once('drain', resolve));
  }

  /** Ends stdin, then SIGTERM to the group, then SIGKILL to whatever of the group is left after the grace period. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child?.pid) return;
    const pgid = child.pid;
    const exited = child.exitCode !== null || child.signalCode !== null;
    this.closed = true;
    try {
      child.stdin?.end();
    } catch {
      // already closed
    }
    if (!exited) signalGroup(pgid, 'SIGTERM');
    const deadline = Date.now() + (this.options.killGraceMs ?? 2000);
    while (groupAlive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
    this.buffer.clear();
    await this.unregister(pgid);
    if (exited) return;
    // The 'close' handler calls onclose; wait for it so callers see a finished close.
    // A grandchild that left the group may hold the pipes open, so the wait is bounded.
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        child.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
