import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { logger, quietRuntime, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

/*
 * The real Temporal dev server behind a TCP proxy the test cuts (connections reset, as through a
 * load balancer whose backend went away) and then closes (connections refused, as when the server
 * stops). The API talks to it through a native connection, as npm run api does, and through the
 * pure-JS client, as other embedders may.
 */

let engine: Engine;
let proxy: TcpProxy;
const connections: { close(): Promise<void> }[] = [];
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  const [host, port] = testStack().temporalAddress.split(':');
  proxy = await startTcpProxy({ host, port: Number(port) });
  quietRuntime();
  const address = `127.0.0.1:${proxy.port}`;
  const native = await NativeConnection.connect({ address });
  const pureJs = await Connection.connect({ address });
  connections.push(native, pureJs);
  for (const connection of [native, pureJs]) {
    apps.push(await buildApp({ db: engine.db, client: new Client({ connection }), taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0 }));
  }
});
afterAll(async () => {
  for (const app of apps) await app.close();
  for (const connection of connections) await connection.close();
  await proxy?.close();
  await engine?.close();
});

function expectTemporalOutage(res: LightMyRequestResponse): void {
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect({ status: res.statusCode, code: res.json().code, retryAfter: res.headers['retry-after'] }).toEqual({ status: 503, code: 'unavailable', retryAfter: '5' });
  expect(res.json().detail).toMatch(/Temporal is unreachable/);
}

describe('while Temporal is unreachable', () => {
  test('every route that needs it answers 503 with the reason and Retry-After, and a start leaves nothing behind', async () => {
    const agent = await insertAgent(engine.db, { name: `outage-${randomUUID()}`, model: { provider: 'scripted', script: [{ text: 'hi' }] } });
    // A thread for each app: a thread runs one run at a time.
    const threads = await Promise.all(apps.map(() => insertThread(engine.db, agent.id)));
    const requests = (threadId: string): InjectOptions[] => [
      { method: 'GET', url: '/v1/runs' },
      { method: 'POST', url: '/v1/runs', payload: { agentId: agent.id, input: 'hi' } },
      { method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'hi' } },
    ];
    const list = { method: 'GET', url: '/v1/runs' } as const;
    for (const res of await Promise.all(apps.map((app) => app.inject(list)))) expect(res.statusCode).toBe(200);

    proxy.cut();
    for (const res of await Promise.all(apps.flatMap((app, i) => requests(threads[i].id).map((r) => app.inject(r))))) expectTemporalOutage(res);
    // The one-shot runs' threads went with their runs, and the threads are free again.
    const listed = await apps[0].inject({ method: 'GET', url: `/v1/threads?agentId=${agent.id}` });
    expect(listed.json().threads.map((t: { id: string }) => t.id).sort()).toEqual(threads.map((t) => t.id).sort());
    expect((await engine.db.query('SELECT count(*)::int AS n FROM runs WHERE agent_id = $1', [agent.id])).rows[0].n).toBe(0);
    expect((await engine.db.query('SELECT count(*)::int AS n FROM threads WHERE agent_id = $1 AND active_run_id IS NOT NULL', [agent.id])).rows[0].n).toBe(0);

    // It comes back: so do the routes, once the client has reconnected (what Retry-After is for).
    proxy.restore();
    for (const app of apps) await waitFor(async () => (await app.inject(list)).statusCode === 200, 60_000, 'GET /v1/runs after Temporal came back');

    // Stopped: nothing listens any more.
    await proxy.close();
    for (const res of await Promise.all(apps.map((app) => app.inject(list)))) expectTemporalOutage(res);
  });
});
