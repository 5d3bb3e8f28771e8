import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { runSearchAttributeKeys, searchAttributeTypeName } from '../../core/search-attributes';
import { freePort, portIsFree } from '../../platform/ports';
import { exited } from './processes';

/**
 * A real Temporal server (not the dev server) on the machine's PostgreSQL, as operators run it:
 * the server and its SQL tool built from go.temporal.io/server (.ci/run builds and caches them with
 * the schema files), the `temporal` role, a history and a visibility database set up with the SQL
 * tool (plugin postgres12), a config in the shape of the release's config/development-postgres12.yaml
 * with archival off, and a dynamic config that enables Updates and Worker Deployments.
 */

export const TEMPORAL_SERVER_VERSION = '1.32.2';

/** Where .ci/run caches the server (`server`, `sql`, `schema/`); TEMPORAL_SERVER_DIR overrides. */
export function temporalServerDir(): string {
  const cache = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return process.env.TEMPORAL_SERVER_DIR ?? path.join(cache, 'durable-agent-engine', `temporal-server-v${TEMPORAL_SERVER_VERSION}`);
}

const installed = () => ['server', 'sql', 'schema'].every((f) => fs.existsSync(path.join(temporalServerDir(), f)));

/**
 * Tests on the real server: skipped with a message where it is not built, but never under CI, where
 * .ci/run builds it. CLUSTER_TESTS=once-done skips them too: .ci/run runs them on the first Node
 * version only (what they test is the server topology, and they take minutes).
 */
export function clusterDescribe(name: string, fn: () => void): void {
  const done = process.env.CLUSTER_TESTS === 'once-done';
  const runs = !done && (installed() || Boolean(process.env.CI));
  if (done) process.stderr.write(`Skipping "${name}": CLUSTER_TESTS=once-done (they ran on the first Node version).\n`);
  else if (!runs) process.stderr.write(`Skipping "${name}": the Temporal server ${TEMPORAL_SERVER_VERSION} is not built in ${temporalServerDir()} (.ci/run builds it; see docs/development.md).\n`);
  // An intended, conditional skip (the guide's rule for tests that need an extra install), not one left in.
  (runs ? describe : describe.skip)(name, fn);
}

export interface TemporalCluster {
  address: string;
  namespace: string;
  /** the server's process (all its services in one), and its two databases on the machine's PostgreSQL */
  pid: number;
  databases: { history: string; visibility: string };
  stop(): Promise<void>;
}

const ADMIN_URL = process.env.EXTERNAL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ClusterOptions {
  /**
   * Authorization as a production cluster may have it: the default JWT claim mapper and
   * authorizer, trusting the keys at `jwksUrl`; `adminToken` (a `temporal-system:admin` token) sets
   * the namespace up. Without it, every caller may do anything.
   */
  authorization?: { jwksUrl: string; adminToken: string };
  /** false: the namespace comes without the engine's search attributes, as a cluster an operator made does */
  searchAttributes?: boolean;
}

/** Starts the server on fresh databases of its own (dropped by stop()), with the default namespace and (unless told not) the engine's search attributes. */
export async function startTemporalCluster(tmpDir: string, options: ClusterOptions = {}): Promise<TemporalCluster> {
  const dir = temporalServerDir();
  const suffix = `${process.pid}_${Date.now().toString(36)}`;
  const dbs = { history: `temporal_${suffix}`, visibility: `temporal_visibility_${suffix}` };
  const admin = new URL(ADMIN_URL);
  const pgHost = admin.hostname;
  const pgPort = admin.port || '5432';
  await withAdmin(async (c) => {
    await c.query(`DO $$ BEGIN CREATE ROLE temporal LOGIN PASSWORD 'temporal'; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
    for (const db of Object.values(dbs)) await c.query(`CREATE DATABASE ${db} OWNER temporal`);
  });
  const sql = (db: string, ...args: string[]) => promisify(execFile)(path.join(dir, 'sql'), [
    '--plugin', 'postgres12', '--ep', pgHost, '-p', pgPort, '-u', 'temporal', '--pw', 'temporal', '--db', db, ...args,
  ], { timeout: 120_000 });
  for (const [kind, db] of [['temporal', dbs.history], ['visibility', dbs.visibility]]) {
    await sql(db, 'setup-schema', '-v', '0.0');
    await sql(db, 'update-schema', '-d', path.join(dir, 'schema', 'postgresql', 'v12', kind, 'versioned'));
  }

  const ports = { grpc: await freePort(), http: await freePort(), members: [await lowPort(), await lowPort(), await lowPort(), await lowPort()], rpc: [await freePort(), await freePort(), await freePort()], pprof: await freePort(), metrics: await freePort() };
  fs.mkdirSync(tmpDir, { recursive: true });
  const dynamicConfig = path.join(tmpDir, 'dynamicconfig.yaml');
  fs.writeFileSync(dynamicConfig, [
    'frontend.enableUpdateWorkflowExecution:', '  - value: true',
    'system.enableDeploymentVersions:', '  - value: true',
    'frontend.workerVersioningWorkflowAPIs:', '  - value: true',
    // Tests read what they just wrote: no wait for caches of namespaces and search attributes.
    'system.forceSearchAttributesCacheRefreshOnRead:', '  - value: true',
    'limit.maxIDLength:', '  - value: 255',
  ].join('\n'));
  const store = (db: string, conns: number) => [
    '      sql:', '        pluginName: "postgres12"', `        databaseName: "${db}"`, `        connectAddr: "${pgHost}:${pgPort}"`,
    '        connectProtocol: "tcp"', '        user: "temporal"', '        password: "temporal"', `        maxConns: ${conns}`, `        maxIdleConns: ${conns}`, '        maxConnLifetime: "1h"',
  ];
  const service = (name: string, grpc: number, members: number, extra: string[] = []) => [
    `  ${name}:`, '    rpc:', `      grpcPort: ${grpc}`, `      membershipPort: ${members}`, '      bindOnLocalHost: true', ...extra,
  ];
  const config = path.join(tmpDir, 'temporal.yaml');
  fs.writeFileSync(config, [
    'log:', '  stdout: true', '  level: warn',
    'persistence:', '  defaultStore: postgres-default', '  visibilityStore: postgres-visibility', '  numHistoryShards: 4', '  datastores:',
    // Small pools: the tests' PostgreSQL serves the other test files and the engine processes too (100 connections).
    '    postgres-default:', ...store(dbs.history, 8), '    postgres-visibility:', ...store(dbs.visibility, 2),
    'global:', '  membership:', '    maxJoinDuration: 30s', '    broadcastAddress: "127.0.0.1"', '  pprof:', `    port: ${ports.pprof}`,
    '  metrics:', '    prometheus:', '      framework: "tally"', '      timerType: "histogram"', `      listenAddress: "127.0.0.1:${ports.metrics}"`,
    // Under global: the JWT claim mapper and the default authorizer.
    ...(options.authorization ? [
      '  authorization:', '    jwtKeyProvider:', `      keySourceURIs: ["${options.authorization.jwksUrl}"]`, '      refreshInterval: 1m',
      '    permissionsClaimName: permissions', '    authorizer: default', '    claimMapper: default',
    ] : []),
    'services:',
    ...service('frontend', ports.grpc, ports.members[0], [`      httpPort: ${ports.http}`]),
    ...service('matching', ports.rpc[0], ports.members[1]),
    ...service('history', ports.rpc[1], ports.members[2]),
    ...service('worker', ports.rpc[2], ports.members[3]),
    // With authorization, the server's own workers call an internal frontend, which asks no token.
    ...(options.authorization ? service('internal-frontend', await freePort(), await lowPort()) : []),
    'clusterMetadata:', '  enableGlobalNamespace: false', '  failoverVersionIncrement: 10', '  masterClusterName: "active"', '  currentClusterName: "active"',
    '  clusterInformation:', '    active:', '      enabled: true', '      initialFailoverVersion: 1', '      rpcName: "frontend"', `      rpcAddress: "127.0.0.1:${ports.grpc}"`,
    'dcRedirectionPolicy:', '  policy: "noop"',
    'archival:', '  history:', '    state: "disabled"', '  visibility:', '    state: "disabled"',
    'namespaceDefaults:', '  archival:', '    history:', '      state: "disabled"', '    visibility:', '      state: "disabled"',
    'dynamicConfigClient:', `  filepath: "${dynamicConfig}"`, '  pollInterval: "10s"',
  ].join('\n'));

  const log = fs.openSync(path.join(tmpDir, 'temporal-server.log'), 'a');
  const services = options.authorization ? ['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((s) => ['--service', s]) : [];
  const server: ChildProcess = spawn(path.join(dir, 'server'), ['--config-file', config, '--allow-no-auth', 'start', ...services], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  const address = `127.0.0.1:${ports.grpc}`;
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM');
    const killer = setTimeout(() => server.kill('SIGKILL'), 15_000);
    await exited(server);
    clearTimeout(killer);
    await withAdmin(async (c) => {
      for (const db of Object.values(dbs)) await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    });
  };
  try {
    await setUpNamespace(address, 'default', server, options);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, namespace: 'default', pid: server.pid!, databases: dbs, stop };
}

/** A free port under 32768: the server stores membership ports as smallint. */
async function lowPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await portIsFree(port)) return port;
  }
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Waits for the frontend, then registers the namespace and every search attribute the engine lists runs by. */
async function setUpNamespace(address: string, namespace: string, server: ChildProcess, options: ClusterOptions): Promise<void> {
  const deadline = Date.now() + 90_000;
  const retry = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    for (;;) {
      if (server.exitCode !== null) throw new Error(`the Temporal server exited (${server.exitCode}) while ${what}`);
      try {
        return await fn();
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the Temporal server did not get ready: ${what}: ${(err as Error).message}`, { cause: err });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  };
  const admin = options.authorization ? { apiKey: options.authorization.adminToken, tls: false as const } : {};
  const connection = await retry('connecting', () => Connection.connect({ address, connectTimeout: 2_000, ...admin }));
  try {
    await retry('registering the namespace', async () => {
      try {
        await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
      } catch (err) {
        if (!/already exists/i.test((err as Error).message)) throw err;
      }
    });
    if (options.searchAttributes === false) {
      await retry('listing the namespace', () => connection.workflowService.listWorkflowExecutions({ namespace, pageSize: 1 }));
      return;
    }
    // temporal.api.enums.v1.IndexedValueType: KEYWORD 2, BOOL 5
    await retry('adding search attributes', () => connection.operatorService.addSearchAttributes({
      namespace, searchAttributes: Object.fromEntries(runSearchAttributeKeys.map((k) => [k.name, searchAttributeTypeName(k) === 'Bool' ? 5 : 2])),
    }));
    // The namespace answers once its cache has it.
    await retry('listing the namespace', () => connection.workflowService.listWorkflowExecutions({ namespace, pageSize: 1, query: `${runSearchAttributeKeys[0].name} = 'x'` }));
  } finally {
    await connection.close();
  }
}
