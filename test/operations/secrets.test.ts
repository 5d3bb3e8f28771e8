import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { findIntegration, insertIntegration, listIntegrations } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import { migrate } from '../../store/migrations';
import { insertThread } from '../../store/threads/threads';
import { installSecretKeys } from '../../platform/secrets/key-ring';
import { openSecretStore } from '../../store/secrets/open-secret-store';
import { keyRing, newSecretKey } from '../../platform/secrets/secret-box';
import { logger, startEngine, type Engine } from '../support/engine';
import { ROOT, exited } from '../support/processes';
import { waitFor } from '../support/wait';
import { ownDatabase } from '../support/own-database';

const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts');
const MARKER = `secrets-test-${randomUUID()}`;
const SECRET = `env-secret-${randomUUID()}`;
const HEADER_SECRET = `header-secret-${randomUUID()}`;
const FILLERS = 24;
const [K1, K2, K3] = [newSecretKey(), newSecretKey(), newSecretKey()];
const b64 = (key: Buffer) => key.toString('base64');

/** A database of this file's own: rotations rewrite every row, and other test files must not see that. */
const database = ownDatabase('secrets_test');
const { url: dbUrl, name: dbName } = database;

/** `npm run secrets:rotate` (what the script runs), against this file's database. */
function rotation(current: Buffer, previous: Buffer): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/rotate-secrets.ts'], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: dbUrl, SECRETS_KEY: b64(current), SECRETS_KEY_PREVIOUS: b64(previous), LOG_LEVEL: 'warn' },
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

async function rotateToEnd(current: Buffer, previous: Buffer): Promise<string> {
  const r = rotation(current, previous);
  await exited(r.child);
  expect({ code: r.child.exitCode, output: r.output() }).toMatchObject({ code: 0 });
  return r.output();
}

describe('secrets at rest', () => {
  let engine: Engine;
  let db: pg.Pool;
  let fixture: Integration;
  const idOf = (key: Buffer) => keyRing(key).current!.id;

  const keysOnRows = async () => (await db.query<{ kid: string; n: number }>(
    "SELECT secrets->>'kid' AS kid, count(*)::int AS n FROM integrations GROUP BY 1 ORDER BY 1")).rows;

  /** A run whose tool call makes the fixture server print the env value it was started with. */
  async function echoRun(turns = 1): Promise<string> {
    const call: ScriptStep = { toolCalls: [{ name: `${fixture.name}__env`, arguments: { name: 'FIXTURE_SECRET' } }] };
    const agent = await insertAgent(db, {
      name: `agent-${randomUUID()}`, integrationIds: [fixture.id],
      model: { provider: 'scripted', script: [...Array.from({ length: turns }, () => call), { text: '{{tool_results}}' }] },
    });
    const thread = await insertThread(db, agent.id);
    return engine.start({ threadId: thread.id, input: 'go' });
  }
  const expectEcho = async (runId: string) =>
    expect(await engine.result(runId)).toMatchObject({ status: 'completed', output: `FIXTURE_SECRET=${SECRET}` });

  beforeAll(async () => {
    await database.create();
    engine = await startEngine('external', { databaseUrl: dbUrl, worker: false });
    db = engine.db;
    await migrate(db);
    installSecretKeys(keyRing(K1));
    await engine.startWorker();
    fixture = await insertIntegration(db, {
      name: `fixture-${randomUUID().slice(0, 8)}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, MARKER], cwd: ROOT, env: { FIXTURE_SECRET: SECRET } },
    });
    for (let i = 0; i < FILLERS; i++) {
      await insertIntegration(db, {
        name: `remote-${i}-${randomUUID().slice(0, 8)}`,
        transport: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${HEADER_SECRET}-${i}` } },
      });
    }
  });

  afterAll(async () => {
    await engine?.close();
    await database.drop();
  });

  test('the stored rows hold no secret in plain text, and each names its key', async () => {
    const { rows } = await db.query<{ row: string; kid: string; transport: Record<string, unknown> }>(
      "SELECT row_to_json(i)::text AS row, secrets->>'kid' AS kid, transport FROM integrations i");
    expect(rows).toHaveLength(FILLERS + 1);
    for (const r of rows) {
      expect(r.row).not.toContain(SECRET);
      expect(r.row).not.toContain(HEADER_SECRET);
      expect(r.kid).toBe(idOf(K1));
      expect(Object.keys(r.transport)).not.toEqual(expect.arrayContaining(['env']));
      expect(Object.keys(r.transport)).not.toEqual(expect.arrayContaining(['headers']));
    }
    expect((await findIntegration(db, fixture.id))?.transport).toMatchObject({ env: { FIXTURE_SECRET: SECRET } });
    await expectEcho(await echoRun());
  });

  test('a sealed value copied into another row does not open there', async () => {
    const victim = (await listIntegrations(db)).find((i) => i.id !== fixture.id)!;
    const client = await db.connect();
    try {
      await client.query('BEGIN');
      await client.query('UPDATE integrations SET secrets = (SELECT secrets FROM integrations WHERE id = $1) WHERE id = $2', [fixture.id, victim.id]);
      await expect(findIntegration(client, victim.id)).rejects.toThrow(/does not open with key .*: it was altered or moved from another row/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  test('plain-text rows are sealed at the first start with a key; without a key, a process refuses to start', async () => {
    const id = `int_plain_${randomUUID().replace(/-/g, '')}`;
    await db.query("INSERT INTO integrations (id, name, transport) VALUES ($1, $2, $3)", [
      id, `plain-${randomUUID().slice(0, 8)}`, JSON.stringify({ type: 'stdio', command: 'x', env: { OLD: SECRET } }),
    ]);
    await openSecretStore(db, { current: K1 }, logger);
    const { rows } = await db.query<{ row: string; kid: string }>("SELECT row_to_json(i)::text AS row, secrets->>'kid' AS kid FROM integrations i WHERE id = $1", [id]);
    expect(rows[0].row).not.toContain(SECRET);
    expect(rows[0].kid).toBe(idOf(K1));
    expect((await findIntegration(db, id))?.transport).toEqual({ type: 'stdio', command: 'x', env: { OLD: SECRET } });
    await db.query('DELETE FROM integrations WHERE id = $1', [id]);

    await expect(openSecretStore(db, {}, logger)).rejects.toThrow(/stores secrets of \d+ integration\(s\).*SECRETS_KEY is not set/);
    await expect(openSecretStore(db, { current: K3 }, logger)).rejects.toThrow(`sealed with key ${idOf(K1)}`);
    installSecretKeys(keyRing(K1));
    // The stand-alone worker says so and exits, before it polls anything.
    const worker = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DATABASE_URL: dbUrl, SECRETS_KEY: '', LOG_LEVEL: 'warn' },
    });
    let stderr = '';
    worker.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    await exited(worker);
    expect(worker.exitCode).toBe(1);
    expect(stderr).toMatch(/The database stores secrets of \d+ integration\(s\) .*but SECRETS_KEY is not set/);
  });

  /**
   * Starts a rotation and holds it at the row in the middle (a row lock of our own), so that what
   * follows happens while some rows are under the old key and some under the new one, for sure.
   */
  async function rotationHeldMidway(current: Buffer, previous: Buffer) {
    const ids = (await db.query<{ id: string }>('SELECT id FROM integrations ORDER BY id')).rows.map((r) => r.id);
    const at = Math.floor(ids.length / 2);
    const holder = new pg.Client({ connectionString: dbUrl });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM integrations WHERE id = $1 FOR UPDATE', [ids[at]]);
    const rotating = rotation(current, previous);
    await waitFor(async () => {
      const waiting = await db.query("SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'", [dbName]);
      return waiting.rowCount === 1;
    }, 60_000, 'the rotation to reach the locked row');
    const release = async () => {
      await holder.query('ROLLBACK');
      await holder.end();
    };
    return { ...rotating, total: ids.length, done: at, release };
  }

  const sortedKids = (counts: { kid: string; n: number }[]) => counts.filter((c) => c.n > 0).sort((a, b) => a.kid.localeCompare(b.kid));

  test('a rotation while runs execute leaves every secret readable and every run working', async () => {
    // Processes restarted with both keys: SECRETS_KEY new, SECRETS_KEY_PREVIOUS old.
    installSecretKeys(keyRing(K2, K1));
    const held = await rotationHeldMidway(K2, K1);
    let runs: string[];
    try {
      expect(await keysOnRows()).toEqual(sortedKids([{ kid: idOf(K1), n: held.total - held.done }, { kid: idOf(K2), n: held.done }]));
      runs = await Promise.all(Array.from({ length: 3 }, () => echoRun(3)));
      await expectEcho(runs[0]);
    } finally {
      await held.release();
    }
    await exited(held.child);
    expect({ code: held.child.exitCode, output: held.output() })
      .toMatchObject({ code: 0, output: expect.stringContaining(`done: ${held.total} row(s) sealed again with key ${idOf(K2)}`) });
    for (const runId of runs) await expectEcho(runId);
    expect(await keysOnRows()).toEqual([{ kid: idOf(K2), n: held.total }]);

    // Without the old key now: a fresh worker spawns the server with the env it opened.
    installSecretKeys(keyRing(K2));
    await engine.stopWorker();
    await engine.startWorker();
    await expectEcho(await echoRun());
  });

  test('a rotation killed midway, then resumed, leaves every secret readable; a third run does nothing', async () => {
    installSecretKeys(keyRing(K3, K2));
    const held = await rotationHeldMidway(K3, K2);
    held.child.kill('SIGKILL');
    await exited(held.child);
    await held.release();
    expect(await keysOnRows()).toEqual(sortedKids([{ kid: idOf(K2), n: held.total - held.done }, { kid: idOf(K3), n: held.done }]));
    // Half rotated: every row opens with the two keys, and runs work.
    const remotes = (await listIntegrations(db)).filter((i) => i.transport.type === 'http');
    expect(remotes.map((i) => i.transport.type === 'http' && i.transport.headers?.Authorization).sort())
      .toEqual(Array.from({ length: FILLERS }, (_, i) => `Bearer ${HEADER_SECRET}-${i}`).sort());
    await expectEcho(await echoRun());

    expect(await rotateToEnd(K3, K2)).toContain(`done: ${held.total - held.done} row(s) sealed again with key ${idOf(K3)}`);
    expect(await rotateToEnd(K3, K2)).toContain(`done: 0 row(s) sealed again with key ${idOf(K3)}`);
    expect(await keysOnRows()).toEqual([{ kid: idOf(K3), n: held.total }]);

    installSecretKeys(keyRing(K3));
    expect((await findIntegration(db, fixture.id))?.transport).toMatchObject({ env: { FIXTURE_SECRET: SECRET } });
    await engine.stopWorker();
    await engine.startWorker();
    await expectEcho(await echoRun());
  });
});
