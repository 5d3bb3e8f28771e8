import pg from 'pg';
import { migrate } from '../../store/migrations';
import { createPool, type Db } from '../../store/pool';
import { listenForRunChanges, type RunChangeFeed } from '../../store/runs/change-feed';
import { appendEvent, listEvents } from '../../store/runs/events';
import { logger } from '../support/engine';
import { waitFor } from '../support/wait';
import { ownDatabase } from '../support/own-database';

/**
 * A step's start (run_started, turn_started, tool_call_started) is NOTIFYed on engine_run_progress
 * only while some process listens for starts (migration 40), and every other run event on
 * engine_run_event only while some process listens for those (migration 41); a run's result always
 * is. A database of its own: other test files' API processes follow runs in the shared one, and would listen.
 */
const database = ownDatabase('notify_listened');
const { url: dbUrl } = database;

let db: Db;
/** a session that LISTENs on the three channels as a bystander (it holds no lock): what was sent */
let bystander: pg.Client;
const heard: { channel: string; runId: string }[] = [];
const feeds: RunChangeFeed[] = [];

beforeAll(async () => {
  await database.create();
  db = createPool(dbUrl, logger, 4);
  await migrate(db);
  bystander = new pg.Client({ connectionString: dbUrl });
  await bystander.connect();
  bystander.on('notification', (n) => heard.push({ channel: n.channel, runId: n.payload ?? '' }));
  await bystander.query('LISTEN engine_run_progress; LISTEN engine_run_event; LISTEN engine_run_ended');
});
afterAll(async () => {
  await Promise.all(feeds.map((f) => f.close()));
  await bystander?.end();
  await db?.end();
  await database.drop();
});

const channelsFor = (runId: string) => heard.filter((h) => h.runId === runId).map((h) => h.channel);

/**
 * Writes `runId`'s result after its other events and waits for its notification, which is always
 * sent: what was sent before it has been heard by then. The channels heard for the run, the result's last.
 */
async function sentFor(runId: string): Promise<string[]> {
  await db.query(`INSERT INTO run_results (run_id, thread_id, agent_id, status, output, turns, usage, tool_calls, created_at)
    VALUES ($1, 'thread_none', 'agent_none', 'completed', 'done', 1, '{}', '[]', now())`, [runId]);
  await waitFor(async () => channelsFor(runId).includes('engine_run_ended'), 10_000, 'the result\'s notification');
  return channelsFor(runId);
}

const newFeed = () => {
  const feed = listenForRunChanges(db, logger, { onDemand: true, lingerMs: 50 });
  feeds.push(feed);
  return feed;
};

/** Starts and the other events of one run, as a step writes them. */
async function steps(runId: string): Promise<void> {
  await appendEvent(db, runId, 1, 'run_started', {});
  await appendEvent(db, runId, 2, 'turn_started', { turn: 1 });
  await appendEvent(db, runId, 3, 'turn_ended', { turn: 1 });
  await appendEvent(db, runId, 4, 'tool_call_started', {});
  await appendEvent(db, runId, 5, 'tool_call_ended', {});
}

test('with nobody listening, no step\'s start or end is announced; the run\'s result is', async () => {
  await steps('run_quiet');
  expect(await sentFor('run_quiet')).toEqual(['engine_run_ended']);
});

test('two writers at the same moment, nobody listening: neither announces its event, unless their runs share a bucket of the lock', async () => {
  const bucketOf = async (runId: string) => (await db.query<{ b: number }>('SELECT abs(hashtext($1) % 16) AS b', [runId])).rows[0].b;
  const ids = Array.from({ length: 200 }, (_, i) => `run_meet_${i}`);
  const buckets = await Promise.all(ids.map(bucketOf));
  const first = ids[0];
  const other = ids.find((_, i) => buckets[i] !== buckets[0])!;
  const same = ids.find((_, i) => i > 0 && buckets[i] === buckets[0])!;
  const tx = await db.connect();
  try {
    // The first writer holds its bucket's lock until it commits.
    await tx.query('BEGIN');
    await tx.query("INSERT INTO run_events (run_id, seq, type) VALUES ($1, 1, 'turn_ended')", [first]);
    await appendEvent(db, other, 1, 'turn_ended', {});
    await appendEvent(db, same, 1, 'turn_ended', {});
    await tx.query('COMMIT');
  } finally {
    tx.release();
  }
  expect(await sentFor(other)).toEqual(['engine_run_ended']);
  // Refused by the first writer's lock: a spare notification, never a missing one.
  expect(await sentFor(same)).toEqual(['engine_run_event', 'engine_run_ended']);
  expect(await sentFor(first)).toEqual(['engine_run_ended']);
});

describe.each([
  { kind: 'progress' as const, channel: 'engine_run_progress', type: 'turn_started' as const, other: 'engine_run_event' },
  { kind: 'event' as const, channel: 'engine_run_event', type: 'turn_ended' as const, other: 'engine_run_progress' },
])('$channel', ({ kind, channel, type, other }) => {
  test('while a process listens for its kind, that kind is announced, to it and to every listener; the other is not; once it lets go, neither', async () => {
    const runId = `run_followed_${kind}`;
    const feed = newFeed();
    const watch = feed.watch(runId, [kind]);
    await waitFor(async () => feed.status().kinds.includes(kind), 10_000, 'the feed to listen');
    await watch.next(1_000); // the wake-up that listening begins with
    const woken = watch.next(10_000);
    await appendEvent(db, runId, 1, type, { turn: 1 });
    await woken;
    await steps(`${runId}_all`);
    const sent = await sentFor(`${runId}_all`);
    expect(sent.filter((c) => c === channel)).toHaveLength(kind === 'progress' ? 3 : 2);
    expect(sent).not.toContain(other);

    watch.close();
    await waitFor(async () => !feed.status().kinds.includes(kind), 10_000, 'the feed to stop listening');
    await steps(`${runId}_after`);
    expect(await sentFor(`${runId}_after`)).toEqual(['engine_run_ended']);
  });

  test('two processes listening: one letting go leaves it announced for the other', async () => {
    const runId = `run_two_${kind}`;
    const [a, b] = [newFeed(), newFeed()];
    const [wa, wb] = [a.watch(runId, [kind]), b.watch(runId, [kind])];
    await waitFor(async () => a.status().kinds.includes(kind) && b.status().kinds.includes(kind), 10_000, 'both to listen');
    wa.close();
    await waitFor(async () => !a.status().kinds.includes(kind), 10_000, 'the first to stop listening');
    await appendEvent(db, runId, 1, type, {});
    expect(await sentFor(runId)).toEqual([channel, 'engine_run_ended']);
    wb.close();
    await waitFor(async () => !b.status().kinds.includes(kind), 10_000, 'the second to stop listening');
  });

  test('an event written unannounced just before someone listens is found by the read that listening begins with', async () => {
    const runId = `run_raced_${kind}`;
    const tx = await db.connect();
    try {
      // A writer that found nobody listening: its event will not be announced, and it has not committed yet.
      await tx.query('BEGIN');
      await tx.query('INSERT INTO run_events (run_id, seq, type) VALUES ($1, 1, $2)', [runId, type]);
      const feed = newFeed();
      const watch = feed.watch(runId, [kind]);
      // The listener's lock waits for the writer: it does not listen before the event is visible.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(feed.status().kinds).not.toContain(kind);
      await tx.query('COMMIT');
      await waitFor(async () => feed.status().kinds.includes(kind), 10_000, 'the feed to listen once the writer committed');
      // Listening began: the watch is woken, and the read it makes finds the event nobody announced.
      await watch.next(1_000);
      expect((await listEvents(db, runId)).map((e) => e.type)).toEqual([type]);
      watch.close();
      await waitFor(async () => !feed.status().kinds.includes(kind), 10_000, 'the feed to stop listening');
      expect(await sentFor(runId)).toEqual(['engine_run_ended']);
    } finally {
      tx.release();
    }
  });
});
