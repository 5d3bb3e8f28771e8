import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { PoolClient } from 'pg';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { followSseText } from '../support/sse-text';
import { testStack } from '../support/stack-env';
import { proxyDatabase, type TcpProxy } from '../support/tcp-proxy';

interface Delta { turn: number; attempt: number; text: string }

/** The stream's events in order, as a client reads them: name and data. */
function eventsIn(sse: string): { event: string; data: Record<string, unknown> }[] {
  return sse.split('\n\n').flatMap((block) => {
    const lines = block.split('\n');
    const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
    const data = lines.find((l) => l.startsWith('data: '))?.slice(6);
    return event && data ? [{ event, data: JSON.parse(data) as Record<string, unknown> }] : [];
  });
}

/**
 * A database that falls behind never slows the model, and never leaves a hole on a screen: while
 * the worker's write of the words waits (here: on a lock another session holds on the drafts), the
 * model goes on writing; past the bound (128 K characters waiting) what waits is dropped, and once
 * the database answers, the stream gets `text_reset` followed by the whole text so far. Real
 * Temporal, PostgreSQL and API; the scripted provider streams the words.
 */
describe('streaming past a database that falls behind', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let url: string;
  let locker: PoolClient | undefined;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await locker?.query('ROLLBACK').catch(() => undefined);
    locker?.release();
    await stopApiEngine({ engine, app });
  });

  test('the writes blocked while the model writes 200,000 characters: text_reset, then the whole text, and the turn\'s text is whole', async () => {
    // 200,000 characters in 50 pieces over 2.5 s: 4,000 every 50 ms, past the bound in about 1.6 s.
    const words = Array.from({ length: 50 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(3_998)}`).join('');
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script: [{ text: words, chunks: 50, delayMs: 2_500 }] } as never });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    const stream = followSseText(`${url}/v1/runs/${runId}/events`);
    await stream.seen('event: text_delta');

    // Writes of drafts wait on this lock (reads do not): the worker's next write hangs until it goes.
    locker = await engine.db.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE run_turn_drafts IN EXCLUSIVE MODE');
    const lockedAt = Date.now();
    // Held past the model's end: the worker's stream is not slowed (the turn's end waits on the writes, not the model).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const { rows: [{ n: blocked }] } = await engine.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%run_turn_drafts%'",
    );
    expect(blocked).toBeGreaterThanOrEqual(1);
    await locker.query('COMMIT');
    locker.release();
    locker = undefined;
    expect(Date.now() - lockedAt).toBeGreaterThanOrEqual(3_000);

    const events = eventsIn(await stream.text());
    const turnEnded = events.findIndex((e) => e.event === 'turn_ended');
    expect(turnEnded).toBeGreaterThan(0);
    const words1 = events.slice(0, turnEnded).filter((e) => e.event === 'text_delta' || e.event === 'text_reset');
    // Some words went out before the lock; after it, text_reset and then the whole text.
    const reset = words1.findIndex((e) => e.event === 'text_reset');
    expect(reset).toBeGreaterThan(0);
    expect(words1[reset].data).toMatchObject({ turn: 1, attempt: 1 });
    expect(words1.filter((e) => e.event === 'text_reset')).toHaveLength(1);
    const after = words1.slice(reset + 1).map((e) => (e.data as unknown as Delta).text).join('');
    expect(after.length).toBe(words.length);
    expect(after === words).toBe(true);
    // What a client shows (each text_reset clears the turn's words) is the turn's text, with no hole.
    const shown = words1.reduce((text, e) => (e.event === 'text_reset' ? '' : text + (e.data as unknown as Delta).text), '');
    expect(shown === words).toBe(true);
    // The durable record is the finished turn, whole.
    const run = (await app.inject({ url: `/v1/runs/${runId}?waitMs=10000` })).json<{ status: string; output: string }>();
    expect(run.status).toBe('completed');
    expect(run.output === words).toBe(true);
  }, 60_000);
});

/**
 * The same, with the worker's database slow rather than locked: every statement of the worker
 * crosses a TCP proxy that holds what it sends for 3 s (a slow link), so each write of the words
 * takes that long while the model goes on: past the bound (128 K characters) within one write.
 */
describe('streaming over a slow link to the database', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let url: string;
  let proxy: TcpProxy;

  beforeAll(async () => {
    const proxied = await proxyDatabase(testStack().databases.embedded);
    proxy = proxied.proxy;
    ({ engine, app } = await startApiEngine('embedded', {}, { workerDatabaseUrl: proxied.url }));
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await proxy?.close();
  });

  test('past the bound: text_reset, then the whole text, nothing missing and nothing twice', async () => {
    // 400,000 characters in 100 pieces over 2.5 s: past the bound within one write even on a loaded machine.
    const words = Array.from({ length: 100 }, (_, i) => `${String(i).padStart(2, '0')}${'y'.repeat(3_998)}`).join('');
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script: [{ text: words, chunks: 100, delayMs: 2_500 }] } as never });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    const stream = followSseText(`${url}/v1/runs/${runId}/events`);
    await stream.seen('event: text_delta');
    proxy.delay(3_000);
    // The model's 2.5 s are over; the writes still crawl.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    proxy.delay(0);

    const events = eventsIn(await stream.text());
    const turnEnded = events.findIndex((e) => e.event === 'turn_ended');
    expect(turnEnded).toBeGreaterThan(0);
    const shownWords = events.slice(0, turnEnded).filter((e) => e.event === 'text_delta' || e.event === 'text_reset');
    const reset = shownWords.findIndex((e) => e.event === 'text_reset');
    expect({ reset: reset > 0, texts: shownWords.length }).toEqual({ reset: true, texts: expect.any(Number) });
    const shown = shownWords.reduce((text, e) => (e.event === 'text_reset' ? '' : text + (e.data as unknown as Delta).text), '');
    expect(shown.length).toBe(words.length);
    expect(shown === words).toBe(true);
    const run = (await app.inject({ url: `/v1/runs/${runId}?waitMs=20000` })).json<{ status: string; output: string }>();
    expect(run.status).toBe('completed');
    expect(run.output === words).toBe(true);
  }, 90_000);
});
