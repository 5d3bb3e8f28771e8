import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import type { McpPool } from '../../mcp-client/connections/pool';
import { createScriptedProvider } from '../../llm/scripted';
import { createPinnedMcpWorker } from '../../worker/create-worker';
import { startMcpPool } from '../../worker/mcp-lifecycle';
import { makeBuildCurrent } from '../../platform/temporal/deployments';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { logger, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { insertFixtureIntegration } from '../support/fixture-integration';

/**
 * Worker Versioning, opt-in: a versioned worker pins the runs it starts to its build, records the
 * build on each run (the run object's `version`, GET /v1/runs?buildId=), and the worker of a pinned
 * integration's queue, of the same build, gets that run's activities. Real Temporal dev server.
 */
describe('versioned workers', () => {
  const version = { deploymentName: `engine-${randomUUID().slice(0, 8)}`, buildId: `build-${randomUUID().slice(0, 8)}` };
  const pinnedQueue = `pinned-${randomUUID()}`;
  const pinnedIdentity = `pinned-versioned-${process.pid}`;
  let engine: Engine;
  let app: FastifyInstance;
  let pinned: { worker: Worker; running: Promise<void>; connection: NativeConnection; pool: McpPool };

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine('embedded', { rateLimitPerMinute: 0 }, { version }));
    const connection = await NativeConnection.connect({ address: testStack().temporalAddress });
    const pool = await startMcpPool(logger, { groupsDir: path.join(testStack().tmpDir, 'versioned-groups') });
    const worker = await createPinnedMcpWorker({
      connection, namespace: 'default', taskQueue: pinnedQueue, identity: pinnedIdentity, version,
      deps: { db: engine.db, logger, providers: { scripted: createScriptedProvider() }, mcpPool: pool },
    });
    pinned = { worker, running: worker.run(), connection, pool };
    await makeBuildCurrent(engine.client, version, { timeoutMs: 30_000 });
  });
  afterAll(async () => {
    if (pinned) {
      pinned.worker.shutdown();
      await pinned.running;
      await pinned.pool.closeAll();
      await pinned.connection.close();
    }
    await stopApiEngine({ engine, app });
  });

  test('a run is pinned to the build that started it, shows it, and is listed by it; a pinned integration\'s worker of that build serves it', async () => {
    const integration = await insertFixtureIntegration(engine.db, { taskQueue: pinnedQueue });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'on build a' } }] },
        { text: '{{tool_results}}' },
      ] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'echo: on build a' });

    const described = await engine.client.workflow.getHandle(runId).describe();
    const info = described.raw.workflowExecutionInfo?.versioningInfo;
    expect(String(info?.behavior)).toMatch(/PINNED|1/);
    expect(info?.deploymentVersion).toMatchObject({ deploymentName: version.deploymentName, buildId: version.buildId });
    // The pinned integration's activities reached the worker of its queue, of the same build.
    const history = await engine.client.workflow.getHandle(runId).fetchHistory();
    const identities = (history.events ?? []).flatMap((e) => e.activityTaskStartedEventAttributes?.identity ?? []);
    expect(identities).toContain(pinnedIdentity);

    const run = (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json();
    expect(run.version).toEqual({ deployment: version.deploymentName, buildId: version.buildId });
    const listed = (await app.inject({ method: 'GET', url: `/v1/runs?buildId=${version.buildId}&limit=5` })).json();
    expect(listed.runs.map((r: { id: string }) => r.id)).toContain(runId);
    expect(listed.runs.find((r: { id: string }) => r.id === runId)).toMatchObject({ status: 'completed', turns: 2, threadId: thread.id });
    const other = (await app.inject({ method: 'GET', url: `/v1/runs?buildId=${version.buildId}-not&threadId=${thread.id}` })).json();
    expect(other.runs).toEqual([]);
    const mixed = await app.inject({ method: 'GET', url: `/v1/runs?buildId=${version.buildId}&waiting=true` });
    expect(mixed.statusCode).toBe(400);
    const badCursor = await app.inject({ method: 'GET', url: `/v1/runs?buildId=${version.buildId}&cursor=abc` });
    expect(badCursor.statusCode).toBe(400);
  });

  test('pages of a build\'s runs follow one another without repeating or skipping a run', async () => {
    const { threadId } = await engine.scriptedThread([{ text: 'done' }]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const runId = await engine.start({ threadId, input: `go ${i}` });
      await engine.result(runId);
      ids.push(runId);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { runs: { id: string }[]; nextCursor: string | null } = (await app.inject({
        method: 'GET', url: `/v1/runs?buildId=${version.buildId}&threadId=${threadId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      })).json();
      seen.push(...page.runs.map((r) => r.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });
});
