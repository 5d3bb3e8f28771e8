import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { buildApp } from '../../api/app';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import type { McpPool } from '../../mcp-client/connections/pool';
import { createScriptedProvider } from '../../llm/scripted';
import { createPinnedMcpWorker } from '../../worker/create-worker';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { logger, startEngine, type Engine } from '../support/engine';
import { ROOT } from '../support/processes';
import { testStack } from '../support/stack-env';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

/** Which worker ran each activity of a run, from the identities in its history. */
async function activityWorkers(engine: Engine, runId: string): Promise<Record<string, string[]>> {
  const history = await engine.client.workflow.getHandle(runId).fetchHistory();
  const typeOf = new Map<string, string>();
  const byType: Record<string, string[]> = {};
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) typeOf.set(String(event.eventId), scheduled.activityType?.name ?? '');
    const started = event.activityTaskStartedEventAttributes;
    if (started) (byType[typeOf.get(String(started.scheduledEventId)) ?? '?'] ??= []).push(started.identity ?? '');
  }
  return byType;
}

describe('an integration pinned to its own task queue', () => {
  let engine: Engine;
  let pinned: { worker: Worker; running: Promise<void>; connection: NativeConnection; pool: McpPool };
  const pinnedQueue = `pinned-${randomUUID()}`;
  const pinnedIdentity = `pinned-worker-${process.pid}`;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
    const pool = await startMcpPool(logger, { groupsDir: path.join(testStack().tmpDir, 'pinned-groups') });
    const worker = await createPinnedMcpWorker({
      connection, namespace: 'default', taskQueue: pinnedQueue, identity: pinnedIdentity,
      deps: { db: engine.db, logger, providers: { scripted: createScriptedProvider() }, mcpPool: pool },
    });
    pinned = { worker, running: worker.run(), connection, pool };
  });
  afterAll(async () => {
    pinned.worker.shutdown();
    await pinned.running;
    await pinned.pool.closeAll();
    await pinned.connection.close();
    await engine.close();
  });

  test('is discovered and called only by the workers of that queue; other kinds of access say it is pinned', async () => {
    const integration = await insertIntegration(engine.db, {
      name: `pinned-${randomUUID().slice(0, 8)}`, taskQueue: pinnedQueue,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [
          { name: `${integration.name}__echo`, arguments: { text: 'from the pinned pool' } },
          { name: 'retrieve_mcp_resource', arguments: { integrationId: integration.name, resourceUri: 'fixture://readme' } },
        ] },
        { text: '{{tool_results}}' },
      ] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    const result = await engine.result(runId);

    expect(result.status).toBe('completed');
    expect(result.toolCalls.map((c) => [c.type, c.status])).toEqual([['mcp_tool', 'ok'], ['mcp_resource', 'error']]);
    expect(result.output).toBe(`echo: from the pinned pool\nResource retrieval failed: integration ${integration.name} is pinned to task queue ${pinnedQueue}, and only its tools can be used`);

    const workers = await activityWorkers(engine, runId);
    expect(workers.discoverPinnedIntegration).toEqual([pinnedIdentity]);
    expect(workers.callMcpTool).toEqual([pinnedIdentity]);
    expect(workers.llmTurn.every((identity) => identity !== pinnedIdentity)).toBe(true);
    // The server was started by the pinned pool only.
    expect(pinned.pool.connectedIds()).toContain(integration.id);
  });

  test('GET /capabilities lists it on a worker of its queue, not on an ordinary one', async () => {
    const integration = await insertIntegration(engine.db, {
      name: `pinned-${randomUUID().slice(0, 8)}`, taskQueue: pinnedQueue,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0 });
    try {
      const res = await app.inject({ method: 'GET', url: `/v1/integrations/${integration.id}/capabilities` });
      expect(res.statusCode).toBe(200);
      expect(res.json().tools.map((t: { name: string }) => t.name)).toContain('echo');
      // Only the pinned pool started the server.
      expect(pinned.pool.connectedIds()).toContain(integration.id);
    } finally {
      await app.close();
    }
  });
});
