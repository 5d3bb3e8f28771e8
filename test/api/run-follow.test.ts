import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { appendEvent, listEvents, mergeEventData, type RunEvent } from '../../store/runs/events';
import { insertRun } from '../../store/runs/runs';
import { insertThread } from '../../store/threads/threads';
import { releasable } from '../../use-cases/runs/follow-events';
import { EventCursor } from '../../use-cases/runs/event-cursor';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { insertFixtureIntegration } from '../support/fixture-integration';

/** A real pg pool that counts its queries, to see that a stream's poll loop stops when its client leaves. */
class CountingPool extends pg.Pool {
  queries = 0;
  override query(...args: unknown[]): never {
    this.queries += 1;
    return (super.query as (...a: unknown[]) => never)(...args);
  }
}

interface SseEvent { id?: string; event: string; data: Record<string, unknown> }

/** Reads an SSE response with its own minimal parser; stops (disconnecting) once `enough` says so. */
async function readSse(url: string, headers: Record<string, string>, enough: (events: SseEvent[]) => boolean = () => false) {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  const events: SseEvent[] = [];
  let raw = '';
  let ended = false;
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    raw += decoder.decode(value, { stream: true });
    const blocks = raw.split('\n\n');
    events.length = 0;
    for (const block of blocks.slice(0, -1)) {
      const fields = Object.fromEntries(block.split('\n').filter((l) => !l.startsWith(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
      if (fields.data) events.push({ id: fields.id || undefined, event: fields.event, data: JSON.parse(fields.data) });
    }
    if (enough(events)) {
      abort.abort();
      await reader.cancel().catch(() => undefined);
      break;
    }
  }
  return { status: res.status, contentType: res.headers.get('content-type'), events, raw, ended };
}

describe('following runs', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let apiPool: CountingPool;
  let url: string;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    apiPool = new CountingPool({ connectionString: testStack().databases.embedded, max: 4 });
    app = await buildApp({ db: apiPool, client: engine.client, taskQueue: engine.taskQueue, logger, sseHeartbeatMs: 200,
      // Its passes would count as queries of this pool: the stream is what these tests watch.
      reconcile: { everyMs: 3_600_000 } });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await apiPool?.end();
    await engine?.close();
  });

  const getJson = async (path: string) => {
    const res = await fetch(`${url}${path}`);
    // Bodies are checked by assertions, not by the compiler.
    return { status: res.status, body: (await res.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  async function agentWithThreads(script: ScriptStep[], threads: number, integrationIds: string[] = []) {
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds });
    const threadIds = [];
    for (let i = 0; i < threads; i++) threadIds.push((await insertThread(engine.db, agent.id)).id);
    return { agent, threadIds };
  }

  test('GET /v1/runs pages through runs newest first, one item per run, filtered by agent, thread and status', async () => {
    const { agent, threadIds } = await agentWithThreads([{ toolCalls: [{ name: 'nope', arguments: {} }] }, { text: 'ok' }], 5);
    const runIds: string[] = [];
    // The first run continues-as-new at every turn: several executions, still one run.
    // One after another, so that "newest first" has one right answer.
    for (const [i, threadId] of threadIds.entries()) {
      const id = await engine.start({ threadId, input: 'go', continueAsNewAtHistoryBytes: i === 0 ? 1 : undefined });
      expect((await engine.result(id)).status).toBe('completed');
      runIds.push(id);
    }

    const listAll = async () => {
      const pages: { runs: { id: string; status: string }[]; nextCursor: string | null }[] = [];
      let cursor: string | null = null;
      do {
        const { status, body } = await getJson(`/v1/runs?agentId=${agent.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(status).toBe(200);
        pages.push(body);
        cursor = body.nextCursor;
      } while (cursor && pages.length < 10);
      return pages;
    };
    // Visibility is eventually consistent: wait until it shows every run as ended.
    await waitFor(async () => {
      const runs = (await listAll()).flatMap((p) => p.runs);
      return runs.length === 5 && runs.every((r) => r.status === 'completed');
    }, 30_000, 'all five runs listed as completed');

    const pages = await listAll();
    expect(pages.map((p) => p.runs.length)).toEqual([2, 2, 1]);
    const listed = pages.flatMap((p) => p.runs);
    // Newest first, each run once (the continued-as-new one included).
    expect(listed.map((r) => r.id)).toEqual([...runIds].reverse());
    expect(listed[0]).toMatchObject({ agentId: agent.id, status: 'completed', stopReason: 'answer', turns: 2, createdAt: expect.any(String) });

    const byThread = await getJson(`/v1/runs?threadId=${threadIds[0]}`);
    expect(byThread.body.runs.map((r: { id: string }) => r.id)).toEqual([runIds[0]]);
    expect((await getJson(`/v1/runs?agentId=${agent.id}&status=completed&limit=100`)).body.runs).toHaveLength(5);
    expect((await getJson(`/v1/runs?agentId=${agent.id}&status=running`)).body).toEqual({ runs: [], nextCursor: null });
    // An agent is named by its name as well as by its id; an unknown one is a 404, not an empty list.
    const byName = await getJson(`/v1/runs?agentId=${agent.name}&limit=100`);
    expect(byName.body.runs.map((r: { id: string }) => r.id)).toEqual([...runIds].reverse());
    expect((await getJson('/v1/runs?agentId=no-such-agent')).status).toBe(404);

    expect((await getJson(`/v1/runs?agentId=${agent.id}&cursor=bm90LWEtdG9rZW4`)).status).toBe(400);
    // A real cursor used with other filters is refused too, rather than confusing Temporal.
    expect((await getJson(`/v1/runs?agentId=${agent.id}&status=completed&cursor=${pages[0].nextCursor}`)).status).toBe(400);
    expect((await getJson(`/v1/runs?agentId=x'%20OR%20'1'='1`)).status).toBe(400);
  });

  test('the event stream resumes after a disconnect with Last-Event-ID, losing and repeating nothing, and closes at run_ended', async () => {
    const { threadIds } = await agentWithThreads([
      { toolCalls: [{ name: 'nope_a', arguments: {} }, { name: 'nope_b', arguments: {} }], delayMs: 500 },
      { toolCalls: [{ name: 'nope_c', arguments: {} }], delayMs: 500 },
      { text: 'done', delayMs: 1500 },
    ], 1);
    const runId = await engine.start({ threadId: threadIds[0], input: 'go' });
    const eventsUrl = `${url}/v1/runs/${runId}/events`;

    const first = await readSse(eventsUrl, {}, (events) => events.some((e) => e.event === 'turn_ended'));
    expect(first.status).toBe(200);
    expect(first.contentType).toMatch(/^text\/event-stream/);
    expect(first.ended).toBe(false);
    const lastId = first.events.at(-1)!.id!;

    // The server notices the disconnect: its poll loop stops issuing queries.
    await waitFor(async () => apiPool.totalCount === apiPool.idleCount, 10_000, 'the stream to release its connections');
    const before = apiPool.queries;
    await new Promise((r) => setTimeout(r, 1_500)); // absence can only be observed over time: several poll intervals
    expect(apiPool.queries).toBe(before);

    const rest = await readSse(eventsUrl, { 'last-event-id': lastId });
    expect(rest.ended).toBe(true);
    expect(rest.raw).toContain(': keep-alive\n\n');
    // Each event once, whatever order the turn's parallel calls wrote them in.
    const bySeq = (events: SseEvent[]) => [...events].sort((a, b) => Number(a.data.seq) - Number(b.data.seq));
    const received = bySeq([...first.events, ...rest.events]);
    const stored = await listEvents(engine.db, runId);
    expect(received.map((e) => e.data.seq)).toEqual(stored.map((e) => e.seq));
    expect(received.map((e) => e.event)).toEqual(stored.map((e) => e.type));
    expect(received.at(-1)).toMatchObject({ event: 'run_ended', data: { status: 'completed', stopReason: 'answer' } });
    const ended = received.filter((e) => e.event === 'tool_call_ended').map((e) => e.data);
    expect(ended).toHaveLength(3);
    expect(ended[0]).toMatchObject({ name: expect.stringMatching(/^nope_/), status: 'error', durationMs: expect.any(Number) });
    expect(received.find((e) => e.event === 'turn_ended')?.data).toMatchObject({ turn: 1, toolCalls: ['nope_a', 'nope_b'], usage: expect.any(Object) });

    // After the end, a resume from the middle replays the rest and closes; one past the end closes at once.
    const replay = await readSse(eventsUrl, {}, () => false);
    expect(replay.events.map((e) => e.id)).toEqual(stored.map((e) => String(e.seq)));
    const past = await readSse(`${eventsUrl}?after=${stored.at(-1)!.seq}`, {});
    expect(past).toMatchObject({ ended: true, events: [] });
  });

  test('a fast tool call\'s events come as they happen, ahead of a slower sibling\'s; a resume from between them repeats nothing', async () => {
    const fx = await insertFixtureIntegration(engine.db);
    const { threadIds } = await agentWithThreads([
      { toolCalls: [{ name: `${fx.name}__slow_progress`, arguments: { ms: 4_000 } }, { name: `${fx.name}__echo`, arguments: { text: 'quick' } }] },
      { text: 'done' },
    ], 1, [fx.id]);
    const runId = await engine.start({ threadId: threadIds[0], input: 'go' });
    const eventsUrl = `${url}/v1/runs/${runId}/events`;
    const ended = (events: SseEvent[], name: string) => events.find((e) => e.event === 'tool_call_ended' && String(e.data.name).endsWith(name));
    // The stream stops as soon as echo's end is shown: the slow call is still running then.
    const first = await readSse(eventsUrl, {}, (events) => ended(events, '__echo') !== undefined);
    expect(ended(first.events, '__slow_progress')).toBeUndefined();
    const echoEnd = ended(first.events, '__echo')!;
    const slowStart = first.events.find((e) => e.event === 'tool_call_started' && String(e.data.name).endsWith('__slow_progress'))!;
    expect(Number(echoEnd.data.seq)).toBeGreaterThan(Number(slowStart.data.seq) + 1);
    // Its id says that it came ahead of the slow call's end.
    expect(echoEnd.id).toMatch(/^\d+,[\d,-]+$/);
    expect((await listEvents(engine.db, runId)).some((e) => e.type === 'tool_call_ended' && String(e.data.name).endsWith('__slow_progress'))).toBe(false);

    const rest = await readSse(eventsUrl, { 'last-event-id': first.events.at(-1)!.id! });
    const stored = await listEvents(engine.db, runId);
    const seqs = [...first.events, ...rest.events].map((e) => Number(e.data.seq)).sort((a, b) => a - b);
    expect(seqs).toEqual(stored.map((e) => e.seq));
    expect(rest.events.at(-1)).toMatchObject({ event: 'run_ended', id: String(stored.at(-1)!.seq) });
  });

  test('closing the API ends open event streams instead of waiting for their runs', async () => {
    const { threadIds } = await agentWithThreads([{ text: 'too late', delayMs: 20_000 }], 1);
    const runId = await engine.start({ threadId: threadIds[0], input: 'go' });
    const second = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger });
    const secondUrl = await second.listen({ host: '127.0.0.1', port: 0 });
    const reading = readSse(`${secondUrl}/v1/runs/${runId}/events`, {});
    await waitFor(async () => (await listEvents(engine.db, runId)).some((e) => e.type === 'turn_started'), 30_000, 'the turn to start');
    await second.close();
    const stream = await reading;
    expect(stream.ended).toBe(true);
    expect(stream.events.some((e) => e.event === 'run_ended')).toBe(false);
    await engine.client.workflow.getHandle(runId).cancel();
    expect((await engine.result(runId)).status).toBe('cancelled');
  });

  test('run_started reads the same live and replayed: the stream sends it once its prefix is merged in', async () => {
    const { agent, threadIds } = await agentWithThreads([{ text: 'unused' }], 1);
    // The run's events are written here, step by step, as the workflow's activities write them.
    const runId = `run_${randomUUID().replace(/-/g, '')}`;
    await insertRun(engine.db, { id: runId, threadId: threadIds[0], agentId: agent.id, input: 'go', idempotencyKey: null, requestHash: null });
    await appendEvent(engine.db, runId, 1, 'run_started', { threadId: threadIds[0], agentId: agent.id, agentName: agent.name });
    const live = readSse(`${url}/v1/runs/${runId}/events`, {}, (events) => events.length > 0);
    await new Promise((r) => setTimeout(r, 1_200)); // several poll intervals: the incomplete event must not go out
    const prefix = { messageCount: 0, injectedPrompts: 0, bytes: 15 };
    await mergeEventData(engine.db, runId, 1, { prefix });
    const [sent] = (await live).events;
    expect(sent).toMatchObject({ id: '1', event: 'run_started', data: { agentId: agent.id, prefix } });
    await appendEvent(engine.db, runId, 2, 'run_ended', { status: 'failed', stopReason: 'error', error: null });
    const replay = await readSse(`${url}/v1/runs/${runId}/events`, {}, (events) => events.length > 0);
    expect(replay.events[0]).toEqual(sent);
  });

  test('the event stream answers 404 for an unknown run and 400 for a malformed Last-Event-ID', async () => {
    expect((await fetch(`${url}/v1/runs/run_nope/events`)).status).toBe(404);
    const res = await fetch(`${url}/v1/runs/run_nope/events`, { headers: { 'last-event-id': 'abc' } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
  });
});

describe('releasing events as they are written', () => {
  const ev = (seq: number, type: RunEvent['type']): RunEvent => ({ seq, type, data: {}, createdAt: '' });
  const seqs = (delivered: { event: RunEvent }[]) => delivered.map((d) => d.event.seq);

  test('a parallel tool call that ends early is delivered at once; the cursor says which came ahead of the gap', () => {
    // seq 5 (the first tool call's end) is not written yet; the second call started and ended.
    const written = [ev(1, 'run_started'), ev(2, 'turn_started'), ev(3, 'turn_ended'), ev(4, 'tool_call_started'), ev(6, 'tool_call_started'), ev(7, 'tool_call_ended')];
    const cursor = EventCursor.after(0);
    const first = releasable(written, cursor);
    expect(seqs(first)).toEqual([1, 2, 3, 4, 6, 7]);
    expect(first.map((d) => d.cursor)).toEqual(['1', '2', '3', '4', '4,6', '4,6-7']);
    // Nothing twice: only the late one is new, and the cursor closes up.
    const second = releasable([...written, ev(5, 'tool_call_ended')], cursor);
    expect(second.map((d) => [d.event.seq, d.cursor])).toEqual([[5, '7']]);
    // A follower resuming from the cursor before 5 came gets 5 alone.
    expect(seqs(releasable([...written, ev(5, 'tool_call_ended')], EventCursor.parse('4,6-7')!))).toEqual([5]);
  });

  test('a gap below the next turn_started never fills: the cursor moves past it', () => {
    const cursor = EventCursor.parse('4')!;
    const out = releasable([ev(6, 'tool_call_started'), ev(7, 'tool_call_ended'), ev(8, 'turn_started'), ev(10, 'tool_call_started')], cursor);
    expect(out.map((d) => [d.event.seq, d.cursor])).toEqual([[6, '4,6'], [7, '4,6-7'], [8, '8'], [10, '8,10']]);
  });

  test('past 32 runs of numbers ahead of a gap, further events wait for it', () => {
    // 1 is missing; 3, 5, 7, … each a run of its own.
    const ahead = Array.from({ length: 40 }, (_, i) => ev(3 + 2 * i, 'tool_call_ended'));
    const cursor = EventCursor.after(0);
    expect(releasable(ahead, cursor)).toHaveLength(32);
    expect(cursor.toString().split(',')).toHaveLength(33);
    expect(cursor.toString().length).toBeLessThan(200);
    // The next turn settles every gap below it: what waited goes out, in order, and the cursor closes up.
    const rest = releasable([...ahead, ev(90, 'turn_started')], cursor);
    expect(seqs(rest)).toEqual([67, 69, 71, 73, 75, 77, 79, 81, 90]);
    expect(cursor.toString()).toBe('90');
  });

  test('run_started waits until it carries its prefix, or until a later event shows the run went on without one', () => {
    const started = ev(1, 'run_started');
    expect(releasable([started], EventCursor.after(0))).toEqual([]);
    expect(seqs(releasable([{ ...started, data: { prefix: { messageCount: 1, injectedPrompts: 0, bytes: 10 } } }], EventCursor.after(0)))).toEqual([1]);
    expect(seqs(releasable([started, ev(2, 'run_ended')], EventCursor.after(0)))).toEqual([1, 2]);
  });

  test('a cursor is read back only in the form it is written', () => {
    for (const text of ['0', '12', '12,14', '12,14-15,18']) expect(EventCursor.parse(text)?.toString()).toBe(text);
    for (const text of ['', 'abc', '-1', '12,12', '12,15,14', '12,13', '12,15-14', '1234567890', `1,${Array.from({ length: 40 }, (_, i) => 3 + 2 * i).join(',')}`]) {
      expect(EventCursor.parse(text)).toBeUndefined();
    }
  });
});
