import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import type { Logger } from '../logger';
import { isAlive, isLeftover, niced, waitForExit } from '../processes';
import { pickPort, portTaken, type PortChoice } from '../ports';
import { runSearchAttributeKeys, searchAttributeTypeName } from '../../core/search-attributes';

/** The embedded Temporal dev server of `npm start`: persisted in the data dir, with the Web UI. */
export interface DevServer {
  address: string;
  uiUrl: string;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  cliPath: string;
  dataDir: string;
  namespace: string;
  /** the frontend's port (npm start: TEMPORAL_PORT, else 7233 preferred) */
  port: PortChoice;
  /** the Web UI's port (npm start: TEMPORAL_UI_PORT, else 8233 preferred) */
  uiPort: PortChoice;
  retention: string;
  logger: Logger;
  /** aborted: stop the server if it is still starting, and reject */
  signal?: AbortSignal;
  /**
   * The niceness the server runs at (0 to 19; 0 by default). Its work is the runs' execution: on a
   * machine it shares with the API, the API's answers (which never wait on it) should come first.
   */
  nice?: number;
}

/** A dev server left by a supervisor that was SIGKILLed still holds the SQLite file: end its process group. */
async function stopLeftover(pidFile: string, logger: Logger): Promise<void> {
  const pid = Number(await fs.readFile(pidFile, 'utf8').catch(() => ''));
  if (!(await isLeftover(pid, 'start-dev'))) return;
  logger.warn({ pid }, 'stopping a Temporal dev server left running by an earlier start');
  process.kill(-pid, 'SIGTERM');
  if (!(await waitForExit(pid, 10_000))) process.kill(-pid, 'SIGKILL');
}

/** Ctrl-C must end npm start within seconds: a server that has not exited by then is killed. */
const STOP_GRACE_MS = 5_000;

/** "7d" or "72h" → hours, the unit every CLI version accepts. */
const retentionHours = (r: string) => `${Number(r.slice(0, -1)) * (r.endsWith('d') ? 24 : 1)}h`;

/**
 * Tries on other ports when the server exits as it starts: another program took a port between the
 * check and the server's bind (ours, or one the CLI picks itself, such as its metrics port).
 */
const PORT_ATTEMPTS = 3;

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const { logger } = options;
  await fs.mkdir(options.dataDir, { recursive: true });
  const pidFile = path.join(options.dataDir, 'temporal.pid');
  await stopLeftover(pidFile, logger);
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    // The preferred ports first; a port is free when checked, but another start may bind it first.
    const port = await pickPort(options.port, attempt > 1);
    const uiPort = await pickPort(options.uiPort, attempt > 1);
    try {
      return await launch(options, pidFile, port, uiPort);
    } catch (err) {
      if (!(err instanceof ExitedAsItStarted) || attempt === PORT_ATTEMPTS) throw err;
      // A port the user set stays theirs: taken meanwhile, the start stops.
      for (const choice of [options.port, options.uiPort]) if ('set' in choice && err.tookPort(choice.set)) throw portTaken(choice);
      if (err.portTaken) logger.warn({ port, uiPort }, 'a port of the Temporal dev server was taken meanwhile; trying others');
      else logger.warn({ port, uiPort, output: err.output }, 'the Temporal dev server exited as it started; trying again on other ports');
    }
  }
}

/** The server exited before its frontend answered; `output` is the end of what it wrote. */
class ExitedAsItStarted extends Error {
  constructor(message: string, readonly output: string, options: ErrorOptions) {
    super(message, options);
  }

  get portTaken(): boolean {
    return /address already in use/.test(this.output);
  }

  /** whether the server says it could not bind `port` */
  tookPort(port: number): boolean {
    return new RegExp(`:${port}\\b[^\\n]*address already in use`).test(this.output);
  }
}

async function launch(options: DevServerOptions, pidFile: string, port: number, uiPort: number): Promise<DevServer> {
  const args = [
    'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort),
    '--db-filename', path.join(options.dataDir, 'temporal.sqlite'), '--namespace', options.namespace,
    '--log-level', 'error',
    ...runSearchAttributeKeys.flatMap((k) => ['--search-attribute', `${k.name}=${searchAttributeTypeName(k)}`]),
  ];
  // Its own process group: Ctrl-C reaches the supervisor, which stops the worker before the server.
  // `nice` execs the server in its own place: the pid (and its process group) stay the server's.
  const command = niced(options.nice ?? 0, options.cliPath, args);
  const child = spawn(command.command, command.args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  // The end of what it writes, on either stream: what says why it stopped, wherever the CLI put it.
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-4000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // 'close': the process has exited and what it wrote has been read (its last words say why it stopped).
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  await fs.writeFile(pidFile, String(child.pid));
  const address = `127.0.0.1:${port}`;

  const stop = async () => {
    const running = child.exitCode === null && child.signalCode === null;
    if (running) process.kill(-child.pid!, 'SIGTERM');
    const kill = () => child.pid && isAlive(child.pid) && process.kill(-child.pid, 'SIGKILL');
    const timer = running ? setTimeout(kill, STOP_GRACE_MS) : undefined;
    await closed;
    clearTimeout(timer);
    await fs.rm(pidFile, { force: true });
  };

  try {
    await waitForFrontend(address, child, 60_000, options.signal);
    await promisify(execFile)(options.cliPath, [
      'operator', 'namespace', 'update', '--address', address, '--namespace', options.namespace,
      '--retention', retentionHours(options.retention),
    ]);
  } catch (err) {
    const exited = child.exitCode !== null || child.signalCode !== null;
    await stop();
    const message = `The Temporal dev server did not start: ${(err as Error).message}\n${output}`;
    throw exited ? new ExitedAsItStarted(message, output, { cause: err }) : new Error(message, { cause: err });
  }
  options.logger.info({ address, uiPort }, 'Temporal dev server ready');
  return { address, uiUrl: `http://127.0.0.1:${uiPort}`, stop };
}

/** Waits until the frontend at `address` answers, or `child` exits. */
export async function waitForFrontend(
  address: string, child: { exitCode: number | null }, timeoutMs: number, signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    if (child.exitCode !== null) throw new Error(`the server exited with code ${child.exitCode}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`no answer on ${address} within ${timeoutMs} ms: ${(last as Error)?.message}`);
}
