import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Client as McpClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client } from '@temporalio/client';
import pg from 'pg';
import { buildApp } from '../../api/app';
import { readRun } from '../../use-cases/runs/runs';
import { syncAgentFiles } from '../../store/agent-files/sync';
import { listenForAnswers, listenForRunChanges, type RunChangeFeed } from '../../store/runs/change-feed';
import { insertAgent } from '../../store/agents';
import { findApproval } from '../../store/approvals';
import { insertIntegration } from '../../store/integrations/integrations';
import { findRunResult } from '../../store/runs/results';
import { listEvents } from '../../store/runs/events';
import { insertThread } from '../../store/threads/threads';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { acquiresDuring } from '../support/pool-acquires';

// Bodies are checked by assertions, not by the compiler.
type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

/** A run's event stream as it arrives, parsed; ends when the caller stops or the stream closes (after run_ended). */
async function* streamEvents(url: string): AsyncGenerator<{ event: string; data: Json }> {
  const res = await fetch(url);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += value;
      const blocks = buffered.split('\n\n');
      buffered = blocks.pop()!;
      for (const block of blocks.filter((b) => b.includes('data: '))) {
        yield { event: /^event: (.+)$/m.exec(block)![1], data: JSON.parse(block.slice(block.indexOf('data: ') + 6).split('\n')[0]) as Json };
      }
    }
  } finally {
    await reader.cancel();
  }
}

/** Reads a whole event stream (it closes after run_ended) and parses its events. */
async function readSse(url: string): Promise<{ event: string; data: Json }[]> {
  const raw = await (await fetch(url)).text();
  return raw.split('\n\n').filter((block) => block.includes('data: ')).map((block) => {
    const fields = Object.fromEntries(block.split('\n').filter((l) => !l.startsWith(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
    return { event: fields.event, data: JSON.parse(fields.data) };
  });
}

describe('reading runs never asks Temporal to run a query on a worker', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let apiPool: pg.Pool;
  /** the apps' connections for reading runs: what a GET costs shows here, apart from the reconciler's reads */
  let readsPool: pg.Pool;
  let changes: RunChangeFeed;
  let url: string;
  // The API's own Temporal client, counting the calls that would reach a worker (query) or Temporal per read (describe).
  const calls = { query: 0, describe: 0 };

  beforeAll(async () => {
    engine = await startEngine('embedded');
    const apiClient = new Client({
      connection: engine.client.connection,
      interceptors: {
        workflow: [{
          query: (input, next) => { calls.query += 1; return next(input); },
          describe: (input, next) => { calls.describe += 1; return next(input); },
        }],
      },
    });
    apiPool = new pg.Pool({ connectionString: testStack().databases.embedded, max: 8 });
    readsPool = new pg.Pool({ connectionString: testStack().databases.embedded, max: 4 });
    // A kind nobody wants is let go of after 300 ms here (30 s by default), so that a test sees it go.
    changes = listenForRunChanges(apiPool, logger, { lingerMs: 300 });
    app = await buildApp({
      db: apiPool, reads: readsPool, client: apiClient, taskQueue: engine.taskQueue, logger, changes, rateLimitPerMinute: 0,
      reconcile: { everyMs: 300, minAgeMs: 0 },
    });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await changes?.close();
    await apiPool?.end();
    await readsPool?.end();
    await engine?.close();
  });

  const getRun = async (runId: string, waitMs?: number) => {
    const started = Date.now();
    const res = await fetch(`${url}/v1/runs/${runId}${waitMs === undefined ? '' : `?waitMs=${waitMs}`}`);
    return { status: res.status, body: (await res.json()) as Json, elapsedMs: Date.now() - started };
  };
  /** How many connections the apps took to read runs while `fn` ran. */
  const readsDuring = (fn: () => Promise<unknown>) => acquiresDuring(readsPool, fn);
  const endedAgoMs = async (runId: string) => Date.now() - new Date((await findRunResult(engine.db, runId))!.endedAt).getTime();

  test('GET, long polls and the event stream of a running run send no workflow query, and the long poll wakes as the run ends', async () => {
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: 'nope', arguments: {} }] },
      { text: 'done', delayMs: 3_000 },
    ]);
    const runId = await engine.start({ threadId, input: 'go' });
    const streaming = readSse(`${url}/v1/runs/${runId}/events`);

    // Turn 1 and its tool call are in the database: GET shows them while the run is running.
    await waitFor(async () => (await getRun(runId)).body.toolCalls.length === 1, 30_000, 'the first turn and its tool call');
    const reads = await Promise.all(Array.from({ length: 30 }, () => getRun(runId)));
    for (const { status, body } of reads) {
      expect(status).toBe(200);
      expect(body).toMatchObject({ id: runId, status: 'running', turns: 1, endedAt: null, output: null });
      expect(body.usage.inputTokens).toBeGreaterThan(0);
      expect(body.toolCalls).toEqual([expect.objectContaining({ turn: 1, name: 'nope', type: 'unknown', status: 'error' })]);
    }
    // The run list shows the same progress (visibility lists the run a moment after its start).
    await waitFor(async () => {
      const list = await fetch(`${url}/v1/runs?threadId=${threadId}`).then((r) => r.json() as Promise<Json>);
      return list.runs.length === 1 && list.runs[0].status === 'running' && list.runs[0].turns === 1;
    }, 10_000, 'the run list to show the running run after one turn');
    const short = await Promise.all([1, 2, 3].map(() => getRun(runId, 300)));
    for (const { body, elapsedMs } of short) {
      expect(body.status).toBe('running');
      expect(elapsedMs).toBeGreaterThanOrEqual(290);
    }

    const { body: ended } = await getRun(runId, 30_000);
    // Woken by the run's result being written, not by a poll interval.
    expect(await endedAgoMs(runId)).toBeLessThan(1_500);
    expect(ended).toMatchObject({ status: 'completed', stopReason: 'answer', output: 'done', turns: 2 });
    const events = await streaming;
    expect(events.at(-1)).toMatchObject({ event: 'run_ended', data: { status: 'completed' } });
    expect(events.map((e) => e.data.seq)).toEqual((await listEvents(engine.db, runId)).map((e) => e.seq));
    expect(calls).toEqual({ query: 0, describe: 0 });
  });

  test('a poll of an unchanged run sends no query, and every change shows in the next GET, as soon as its event is streamed', async () => {
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: 'nope', arguments: { n: 1 } }, { name: 'nada', arguments: { n: 2 } }], delayMs: 300 },
      { toolCalls: [{ name: 'nope', arguments: { n: 3 } }], delayMs: 300 },
      { text: 'done', delayMs: 300 },
    ]);
    const runId = await engine.start({ threadId, input: 'go' });
    const seen: string[] = [];
    for await (const { event, data } of streamEvents(`${url}/v1/runs/${runId}/events`)) {
      seen.push(event);
      // The GET right after the event was streamed shows what the event says has happened.
      const { body } = await getRun(runId);
      if (event === 'turn_ended') expect(body.turns).toBeGreaterThanOrEqual(data.turn);
      if (event === 'tool_call_ended') expect(body.toolCalls.map((c: Json) => c.id)).toContain(data.toolCallId);
      if (event === 'run_ended') {
        expect(body).toMatchObject({ status: 'completed', output: 'done', turns: 3 });
        break;
      }
    }
    expect(seen.filter((e) => e === 'tool_call_ended')).toHaveLength(3);

    // The run has not changed since: fifty polls cost at most the one read that fills the cache.
    expect(await readsDuring(async () => {
      for (let i = 0; i < 50; i++) expect((await getRun(runId)).body.status).toBe('completed');
    })).toBeLessThanOrEqual(1);
  });

  test('a run started through the API is read from its record until it changes, while the process follows runs: the long poll after a start sends no query', async () => {
    // No worker polls this queue: the run stays as recorded, and nothing but the test changes it.
    const feed = listenForRunChanges(engine.db, logger, { lingerMs: 50 });
    const idle = await buildApp({ db: apiPool, reads: readsPool, client: engine.client, taskQueue: `idle-${randomUUID()}`, logger, changes: feed, rateLimitPerMinute: 0 });
    const start = async (threadId: string) => {
      const started = await idle.inject({ method: 'POST', url: `/v1/threads/${threadId}/runs`, payload: { input: 'go' } });
      expect(started.statusCode).toBe(202);
      return started.json<Json>().id as string;
    };
    const longPoll = (runId: string) => idle.inject({ method: 'GET', url: `/v1/runs/${runId}?waitMs=200` }).then((r) => r.json<Json>());
    const [{ threadId: firstThread }, { threadId }] = [await engine.scriptedThread([{ text: 'never' }]), await engine.scriptedThread([{ text: 'never' }])];
    try {
      // Nobody polls a run: the process does not follow runs, and reads the database for the one it is asked for.
      const first = await start(firstThread);
      expect(await readsDuring(() => longPoll(first))).toBeGreaterThan(0);
      expect(feed.status().kinds).not.toContain('event');

      // A client reads a run again: the process follows runs, and keeps what it starts.
      await idle.inject({ method: 'GET', url: `/v1/runs/${first}` });
      await waitFor(async () => feed.status().kinds.includes('event'), 10_000, 'the API to follow runs');
      const runId = await start(threadId);
      let seeded: Json;
      expect(await readsDuring(async () => {
        seeded = await longPoll(runId);
      })).toBe(0);
      // Exactly what a read of the database says.
      expect(seeded).toEqual(JSON.parse(JSON.stringify(await readRun(apiPool, runId))));
      expect(seeded).toMatchObject({ id: runId, threadId, status: 'running', turns: 0, toolCalls: [], endedAt: null });

      // A change heard drops it: the next GET reads the database.
      await engine.db.query("SELECT pg_notify('engine_run_event', $1)", [runId]);
      await waitFor(async () => (await readsDuring(() => idle.inject({ method: 'GET', url: `/v1/runs/${runId}` }))) > 0,
        5_000, 'a GET that reads the database after the change');
    } finally {
      await idle.close();
      await feed.close();
    }
  });

  test('a step\'s start reaches event streams as it happens, and leaves a cached run object in place', async () => {
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: 'nope', arguments: {} }] },
      { text: 'slowly', delayMs: 2_000 },
    ]);
    const runId = await engine.start({ threadId, input: 'go' });
    const heardAt: Record<string, number> = {};
    for await (const { event, data } of streamEvents(`${url}/v1/runs/${runId}/events`)) {
      heardAt[data.turn === 2 ? `${event} 2` : event] ??= Date.now();
      if (event === 'run_ended') break;
    }
    // Turn 2's start was streamed when it happened, not with its end two seconds later.
    expect(heardAt['turn_ended 2'] - heardAt['turn_started 2']).toBeGreaterThan(1_500);

    expect((await getRun(runId)).body.status).toBe('completed');
    const marker = `run_${randomUUID()}`;
    const heard = (id: string) => new Promise<void>((resolve) => {
      const off = changes.onChange((runId) => {
        if (runId === id) {
          off();
          resolve();
        }
      });
    });
    const readsAfter = async (channel: string) => {
      const done = heard(marker);
      await engine.db.query("SELECT pg_notify($1, $2), pg_notify('engine_run_input', $3)", [channel, runId, marker]);
      await done;
      return readsDuring(async () => expect((await getRun(runId)).body.status).toBe('completed'));
    };
    expect(await readsAfter('engine_run_progress')).toBe(0);
    expect(await readsAfter('engine_run_event')).toBe(1);
  });

  test('a worker\'s feed listens for answers alone: the run events every step writes never reach it', async () => {
    const feed = listenForAnswers(engine.db, logger);
    try {
      // What a tool call waiting for an answer does (activities/tools/elicitation.ts).
      const watch = feed.watch('run_c', ['input']);
      const heard: (string | undefined)[] = [];
      feed.onChange((runId) => heard.push(runId), ['input']);
      await waitFor(async () => feed.status().listening, 10_000, 'the listener to connect');
      expect(feed.status().kinds).toEqual(['input']);
      heard.length = 0; // the wake-up every new connection sends
      // Sent in this order and heard in it: once the last is heard, the others would have been.
      await engine.db.query("SELECT pg_notify('engine_run_event', 'run_a'), pg_notify('engine_run_ended', 'run_b'), pg_notify('engine_run_input', 'run_c')");
      await waitFor(async () => heard.includes('run_c'), 10_000, 'the input notification');
      // Other test files share the database: their runs' own questions are heard too, and are not this test's.
      expect(heard.filter((id) => id === 'run_a' || id === 'run_b' || id === 'run_c')).toEqual(['run_c']);
      watch.close();
    } finally {
      await feed.close();
    }
  });

  test('the API listens for step starts only while an event stream follows a run, and a stream hears a start made before that LISTEN took effect', async () => {
    await waitFor(async () => changes.status().listening && !changes.status().kinds.includes('progress'), 10_000,
      'the listener to connect, without step starts');
    // Followed while clients poll runs; left alone when nobody does (run-view-follow.test.ts).
    expect(changes.status().kinds).not.toContain('progress');

    const runId = `run_${randomUUID()}`;
    const within5s = (p: Promise<void>) => Promise.race([p.then(() => 'woken'), new Promise((resolve) => setTimeout(() => resolve('timed out'), 5_000))]);
    const watch = changes.watch(runId, ['progress']);
    // Woken once LISTEN takes effect: a start made before then is found by the read that follows.
    expect(await within5s(watch.next(10_000))).toBe('woken');
    expect(changes.status().kinds).toContain('progress');
    const woken = within5s(watch.next(10_000));
    await engine.db.query("SELECT pg_notify('engine_run_progress', $1)", [runId]);
    expect(await woken).toBe('woken');
    watch.close();
    await waitFor(async () => !changes.status().kinds.includes('progress'), 5_000, 'the API to stop listening for step starts');

    // An event stream asks for them; a long poll does not.
    const { threadId } = await engine.scriptedThread([{ text: 'slowly', delayMs: 1_500 }]);
    const run = await engine.start({ threadId, input: 'go' });
    const polled = getRun(run, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(changes.status().kinds).not.toContain('progress');
    const seen: string[] = [];
    for await (const { event } of streamEvents(`${url}/v1/runs/${run}/events`)) {
      seen.push(event);
      // Asked for as the stream opened: listened for by the time the turn (1.5 s long) ends.
      if (event === 'turn_ended') expect(changes.status().kinds).toContain('progress');
      if (event === 'run_ended') break;
    }
    expect(seen).toEqual(['run_started', 'turn_started', 'turn_ended', 'run_ended']);
    expect((await polled).body).toMatchObject({ status: 'completed', output: 'slowly' });
    await waitFor(async () => !changes.status().kinds.includes('progress'), 5_000, 'the API to stop listening for step starts after the stream');
  });

  test('an on-demand feed listens only while someone waits, and hears what changed before its LISTEN took effect', async () => {
    const feed = listenForRunChanges(engine.db, logger, { onDemand: true, lingerMs: 200 });
    const listening = async () => (await engine.db.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'engine-run-changes' AND pid = $1", [feed.status().pid ?? 0],
    )).rows[0].n === 1;
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(feed.status()).toMatchObject({ listening: false, kinds: [] });

      const runId = `run_${randomUUID()}`;
      const watch = feed.watch(runId, ['input']);
      const within5s = (p: Promise<void>) => Promise.race([p.then(() => 'woken'), new Promise((resolve) => setTimeout(() => resolve('timed out'), 5_000))]);
      // Woken once LISTEN takes effect: a change made before then is found by the read that follows.
      expect(await within5s(watch.next(10_000))).toBe('woken');
      expect(feed.status().listening).toBe(true);
      expect(await listening()).toBe(true);
      const woken = within5s(watch.next(10_000));
      await engine.db.query("SELECT pg_notify('engine_run_input', $1)", [runId]);
      expect(await woken).toBe('woken');

      const { pid } = feed.status();
      watch.close();
      await waitFor(async () => !feed.status().listening, 5_000, 'the feed to let go of its connection');
      await waitFor(async () => (await engine.db.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0].n === 0,
        5_000, 'the LISTEN backend to end');
    } finally {
      await feed.close();
    }
  });

  test('a long poll still wakes when the run ends after the LISTEN connection was cut', async () => {
    const { threadId } = await engine.scriptedThread([{ text: 'late', delayMs: 2_500 }]);
    const runId = await engine.start({ threadId, input: 'go' });
    await waitFor(async () => changes.status().listening, 10_000, 'the listener to connect');
    const waiting = getRun(runId, 30_000);
    const before = changes.status().pid!;
    await engine.db.query('SELECT pg_terminate_backend($1)', [before]);
    await waitFor(async () => changes.status().listening && changes.status().pid !== before, 10_000, 'the listener to reconnect');

    const { body } = await waiting;
    expect(body).toMatchObject({ status: 'completed', output: 'late' });
    expect(await endedAgoMs(runId)).toBeLessThan(1_500);
    expect(calls.query).toBe(0);
  });

  test('a terminated run\'s pending approvals are closed with it: a late decision hears that the call was cancelled', async () => {
    const fx = await insertIntegration(engine.db, {
      name: `rp${randomUUID().slice(0, 8)}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: path.join(__dirname, '..', '..') },
    });
    const agent = await insertAgent(engine.db, {
      name: `rp-${randomUUID()}`, integrationIds: [fx.id], model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'x' } }] }, { text: 'never' }] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    await waitFor(async () => (await findApproval(engine.db, runId, 'call_1_1'))?.status === 'pending', 30_000, 'the pending approval');
    await engine.client.workflow.getHandle(runId).terminate('an operator stops it');

    const { body } = await getRun(runId, 20_000);
    expect(body).toMatchObject({ status: 'failed', error: { type: 'WorkflowClosed' }, pendingApprovals: [] });
    expect(await findApproval(engine.db, runId, 'call_1_1')).toMatchObject({ status: 'cancelled', resolvedBy: 'cancel' });
    const late = await fetch(`${url}/v1/runs/${runId}/approvals/call_1_1`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }),
    });
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ approvalStatus: 'cancelled' });
  });

  test('a run whose workflow an operator terminated gets a failed result: the long poll, GET and the stream end', async () => {
    const { threadId } = await engine.scriptedThread([{ text: 'never', delayMs: 8_000 }]);
    const runId = await engine.start({ threadId, input: 'go' });
    await waitFor(async () => (await listEvents(engine.db, runId)).some((e) => e.type === 'turn_started'), 30_000, 'the turn to start');
    const streaming = readSse(`${url}/v1/runs/${runId}/events`);
    const waiting = getRun(runId, 20_000);
    await engine.client.workflow.getHandle(runId).terminate('an operator stops it');

    const { body, elapsedMs } = await waiting;
    expect(body).toMatchObject({ status: 'failed', stopReason: 'error', error: { type: 'WorkflowClosed' }, endedAt: expect.any(String) });
    expect(elapsedMs).toBeLessThan(10_000);
    expect((await getRun(runId)).body).toEqual(body);
    const events = await streaming;
    expect(events.at(-1)).toMatchObject({ event: 'run_ended', data: { status: 'failed', error: { type: 'WorkflowClosed' } } });
    // The thread is free again.
    const next = await fetch(`${url}/v1/threads/${threadId}/runs`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: 'again' }),
    });
    expect(next.status).toBe(202);
    expect(calls.query).toBe(0);
  });

  test('an agent called over MCP reads its run\'s event log as the run changes, not on a timer', async () => {
    const name = `waits_${randomUUID().slice(0, 8)}`;
    const dir = path.join(testStack().tmpDir, `agents-${name}`);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, `${name}.chatmd`),
      '<config>{"model": {"provider": "scripted", "script": [{"text": "waited", "delayMs": 4000}]}}</config>\n<system>You wait.</system>\n');
    expect((await syncAgentFiles(engine.db, dir)).errors).toEqual([]);
    // An API process of its own, whose pool nothing else uses (no reconciliation during the test).
    const mcpDb = new pg.Pool({ connectionString: testStack().databases.embedded, max: 4 });
    const mcpApp = await buildApp({
      db: mcpDb, client: engine.client, taskQueue: engine.taskQueue, logger, changes, rateLimitPerMinute: 0, reconcile: { everyMs: 3_600_000 },
    });
    const mcp = new McpClient({ name: 'read-path', version: '1.0.0' });
    try {
      const address = await mcpApp.listen({ host: '127.0.0.1', port: 0 });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${address}/mcp`)));
      let reads = 0;
      let turnStarted = false;
      mcpDb.on('acquire', () => { if (turnStarted) reads += 1; });
      mcp.setNotificationHandler('notifications/progress', (n) => { if (n.params.message === 'Turn 1') turnStarted = true; });
      const result = await mcp.callTool({ name, arguments: { input: 'go' } }, { onprogress: () => undefined, timeout: 60_000 });
      expect(result.content).toEqual([{ type: 'text', text: 'waited' }]);
      expect(turnStarted).toBe(true);
      // The turn is silent for 4 s: a read every 250 ms would be 16 or more. Woken by the turn's
      // end and the run's, the call reads the events and the outcome a few times.
      expect(reads).toBeLessThan(8);
    } finally {
      await mcp.close();
      await mcpApp.close();
      await mcpDb.end();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
