import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { resolveTemporalCli } from '../../platform/temporal/cli';
import { startEmbeddedPostgres } from '../../store/embedded-postgres';
import { migrate } from '../../store/migrations';
import { createLogger } from '../../platform/logger';
import { runSearchAttributeKeys } from '../../core/search-attributes';
import { TMP_ROOT, type TestStack } from './stack-env';
import { freePort } from '../../platform/ports';
import { isAlive, isLeftover } from '../../platform/processes';

/** A fresh database on the machine's PostgreSQL (or EXTERNAL_DATABASE_URL), dropped at teardown. */
async function createExternalDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.EXTERNAL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `engine_test_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(`The external PostgreSQL at ${adminUrl} is not reachable (${(err as Error).message}). Start it, or set EXTERNAL_DATABASE_URL.`, { cause: err });
  }
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** Directories of earlier runs whose jest process is gone. */
async function removeStaleRuns(): Promise<void> {
  const entries = await fs.readdir(TMP_ROOT).catch(() => [] as string[]);
  for (const entry of entries) {
    const pid = Number(/^run-(\d+)$/.exec(entry)?.[1]);
    if (pid && isAlive(pid)) continue;
    // A jest run that was killed leaves its embedded PostgreSQL running (it has its own process group).
    const postmaster = await fs.readFile(path.join(TMP_ROOT, entry, 'embedded-pg', 'postgres', 'postmaster.pid'), 'utf8').catch(() => '');
    const pgPid = Number(postmaster.split('\n')[0]);
    if (await isLeftover(pgPid, path.join(TMP_ROOT, entry))) process.kill(pgPid, 'SIGQUIT');
    await fs.rm(path.join(TMP_ROOT, entry), { recursive: true, force: true });
  }
}

export default async function globalSetup(): Promise<void> {
  const logger = createLogger(process.env.LOG_LEVEL ?? 'warn', 'test-setup');
  const TMP_DIR = path.join(TMP_ROOT, `run-${process.pid}`);
  await removeStaleRuns();
  await fs.mkdir(TMP_DIR, { recursive: true });

  const cliPath = await resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, logger });
  const [env, bundle, embedded, external] = await Promise.all([
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: cliPath }, searchAttributes: runSearchAttributeKeys, ip: '127.0.0.1',
        // Its stderr is jest's: the shutdown noise of other tests' cancelled calls would flood the output.
        log: { format: 'pretty', level: 'never' },
      },
    }),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') }),
    freePort().then((port) => startEmbeddedPostgres({ dataDir: path.join(TMP_DIR, 'embedded-pg'), port, logger, database: 'engine_test' })),
    createExternalDatabase(),
  ]);
  const bundlePath = path.join(TMP_DIR, 'workflow-bundle.js');
  await fs.writeFile(bundlePath, bundle.code);

  for (const url of [embedded.url, external.url]) {
    const pool = new pg.Pool({ connectionString: url });
    await migrate(pool);
    await pool.end();
  }
  const stack: TestStack = {
    tmpDir: TMP_DIR,
    temporalAddress: env.address,
    temporalCliPath: cliPath,
    workflowBundlePath: bundlePath,
    databases: { embedded: embedded.url, external: external.url },
    secretsKey: process.env.SECRETS_KEY || randomBytes(32).toString('base64'),
  };
  process.env.ENGINE_TEST_STACK = JSON.stringify(stack);
  // One secrets key for the run: in-process engines install it, spawned APIs and workers inherit it.
  process.env.SECRETS_KEY ??= stack.secretsKey;
  (globalThis as Record<string, unknown>).__ENGINE_TEST__ = { env, embedded, external, tmpDir: TMP_DIR };
}
