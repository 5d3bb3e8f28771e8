import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { createPool, type Db } from '../../store/pool';
import { insertThread } from '../../store/threads/threads';
import { freePort } from '../../platform/ports';
import { startDevServer, type DevServer } from '../../platform/temporal/dev-server';
import { logger } from '../support/engine';
import { exited, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const WAIT_MS = 90_000;

interface RunBody { status: string; output: string | null; pendingApprovals: { toolCallId: string }[] }

/**
 * A run waiting for approval holds nothing but its workflow's state in Temporal: the Temporal
 * server itself may restart meanwhile (its own dev server here, persisted in a file, so that the
 * suites sharing the global one are not disturbed), and the run goes on after the decision.
 */
describe('a run waiting for approval while the Temporal server restarts', () => {
  const suffix = randomUUID().slice(0, 8);
  const taskQueue = `restart-${suffix}`;
  let server: DevServer | undefined;
  let options: Parameters<typeof startDevServer>[0];
  let connection: Connection | undefined;
  let db: Db;
  let app: FastifyInstance | undefined;
  let worker: ChildProcess | undefined;

  beforeAll(async () => {
    options = {
      cliPath: testStack().temporalCliPath, dataDir: path.join(testStack().tmpDir, `temporal-restart-${suffix}`), namespace: 'default',
      preferredPort: await freePort(), preferredUiPort: await freePort(), retention: '1d', logger, nice: 7,
    };
    server = await startDevServer(options);
    connection = await Connection.connect({ address: server.address });
    db = createPool(testStack().databases.embedded, logger);
    app = await buildApp({ db, client: new Client({ connection }), taskQueue, logger, rateLimitPerMinute: 0 });
    worker = spawnWorker({ DATABASE_URL: testStack().databases.embedded, TASK_QUEUE: taskQueue, TEMPORAL_ADDRESS: server.address, SECRETS_KEY: testStack().secretsKey });
  }, 120_000);
  afterAll(async () => {
    if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    if (worker) await exited(worker);
    await app?.close();
    await connection?.close();
    await server?.stop();
    await db?.end();
  });

  test('the dev server runs at the niceness it was given, in every thread it has started', async () => {
    const pid = Number(await fs.readFile(path.join(options.dataDir, 'temporal.pid'), 'utf8'));
    // The pid is the server's own (`nice` execs it): its command line is the CLI's.
    expect(await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).toContain('start-dev');
    const tids = await fs.readdir(`/proc/${pid}/task`);
    expect(tids.length).toBeGreaterThan(1);
    // Field 19 of /proc/<pid>/task/<tid>/stat, counted after the command name's closing parenthesis.
    const niceness = async (tid: string) => {
      const stat = await fs.readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    };
    expect(new Set(await Promise.all(tids.map(niceness)))).toEqual(new Set([7]));
  });

  test('the decision, sent after the restart, lets the run go on to its answer', async () => {
    const fx = await insertIntegration(db, {
      name: `rs${suffix}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = await insertAgent(db, {
      name: `restart-${suffix}`, integrationIds: [fx.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'after' } }] }, { text: '{{tool_results}}' }] },
    });
    const thread = await insertThread(db, agent.id);
    const started = await app!.inject({ method: 'POST', url: `/v1/threads/${thread.id}/runs`, payload: { input: 'go' } });
    expect(started.statusCode).toBe(202);
    const runId = started.json<{ id: string }>().id;
    const read = async () => (await app!.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<RunBody>();
    await waitFor(async () => (await read()).pendingApprovals.length === 1, WAIT_MS, 'the call to wait for approval');

    const address = server!.address;
    await server!.stop();
    server = await startDevServer(options);
    // The same port and database file: every process finds its server where it was.
    expect(server.address).toBe(address);
    expect((await read())).toMatchObject({ status: 'running', pendingApprovals: [{ toolCallId: 'call_1_1' }] });

    // The API's client and the worker reconnect by themselves; until the worker polls again a decision may answer 503.
    let decided = 0;
    await waitFor(async () => {
      const res = await app!.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_1`, payload: { decision: 'approve' } });
      decided = res.statusCode;
      // A 409 naming "approve" is our own earlier attempt that got through.
      return res.statusCode === 200 || (res.statusCode === 409 && res.json<{ decision: string }>().decision === 'approve');
    }, WAIT_MS, 'the decision to be taken');
    expect([200, 409]).toContain(decided);
    await waitFor(async () => (await read()).status !== 'running', WAIT_MS, 'the run to end');
    expect(await read()).toMatchObject({ status: 'completed', output: 'echo: after', pendingApprovals: [] });
  }, 240_000);
});
