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
 * only while some process listens for starts (migration 40); every other event always is. A database
 * of its own: other test files' API processes follow runs in the shared one, and would listen.
 */
const database = ownDatabase('progress_notify');
const { url: dbUrl } = database;

let db: Db;
/** a session that LISTENs on both channels as a bystander (it holds no lock): what was sent */
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
  await bystander.query('LISTEN engine_run_progress; LISTEN engine_run_event');
});
afterAll(async () => {
  await Promise.all(feeds.map((f) => f.close()));
  await bystander?.end();
  await db?.end();
  await database.drop();
});

const channelsFor = (runId: string) => heard.filter((h) => h.runId === runId).map((h) => h.channel);

/** Writes a step's end after `runId`'s other events and waits for it: what was sent before it has been heard by then. */
async function sentFor(runId: string, endSeq: number): Promise<string[]> {
  await appendEvent(db, runId, endSeq, 'tool_call_ended', {});
  await waitFor(async () => channelsFor(runId).includes('engine_run_event'), 10_000, 'the end\'s notification');
  return channelsFor(runId);
}

const newFeed = () => {
  const feed = listenForRunChanges(db, logger, { onDemand: true, lingerMs: 50 });
  feeds.push(feed);
  return feed;
};

test('with nobody listening for starts, starts are not announced; ends are', async () => {
  await appendEvent(db, 'run_quiet', 1, 'run_started', {});
  await appendEvent(db, 'run_quiet', 2, 'turn_started', { turn: 1 });
  await appendEvent(db, 'run_quiet', 3, 'tool_call_started', {});
  expect(await sentFor('run_quiet', 4)).toEqual(['engine_run_event']);
});

test('while a process listens for starts they are announced, to it and to every listener; once it lets go, no longer', async () => {
  const feed = newFeed();
  const watch = feed.watch('run_followed', ['progress']);
  await waitFor(async () => feed.status().kinds.includes('progress'), 10_000, 'the feed to listen for starts');
  await watch.next(1_000); // the wake-up that listening begins with
  const woken = watch.next(10_000);
  await appendEvent(db, 'run_followed', 1, 'turn_started', { turn: 1 });
  await woken;
  expect(await sentFor('run_followed', 2)).toEqual(['engine_run_progress', 'engine_run_event']);

  watch.close();
  await waitFor(async () => !feed.status().kinds.includes('progress'), 10_000, 'the feed to stop listening for starts');
  await appendEvent(db, 'run_after', 1, 'turn_started', { turn: 1 });
  expect(await sentFor('run_after', 2)).toEqual(['engine_run_event']);
});

test('two processes listening: one letting go leaves starts announced for the other', async () => {
  const [a, b] = [newFeed(), newFeed()];
  const [wa, wb] = [a.watch('run_two', ['progress']), b.watch('run_two', ['progress'])];
  await waitFor(async () => a.status().kinds.includes('progress') && b.status().kinds.includes('progress'), 10_000, 'both to listen');
  wa.close();
  await waitFor(async () => !a.status().kinds.includes('progress'), 10_000, 'the first to stop listening');
  await appendEvent(db, 'run_two', 1, 'tool_call_started', {});
  expect(await sentFor('run_two', 2)).toEqual(['engine_run_progress', 'engine_run_event']);
  wb.close();
  await waitFor(async () => !b.status().kinds.includes('progress'), 10_000, 'the second to stop listening');
});

test('a start written unannounced just before someone listens is found by the read that listening begins with', async () => {
  const tx = await db.connect();
  try {
    // A writer that found nobody listening: its start will not be announced, and it has not committed yet.
    await tx.query('BEGIN');
    await tx.query("INSERT INTO run_events (run_id, seq, type) VALUES ('run_raced', 1, 'turn_started')");
    const feed = newFeed();
    const watch = feed.watch('run_raced', ['progress']);
    // The listener's lock waits for the writer: it does not listen before the start is visible.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(feed.status().kinds).not.toContain('progress');
    await tx.query('COMMIT');
    await waitFor(async () => feed.status().kinds.includes('progress'), 10_000, 'the feed to listen once the writer committed');
    // Listening began: the watch is woken, and the read it makes finds the start nobody announced.
    await watch.next(1_000);
    expect((await listEvents(db, 'run_raced')).map((e) => e.type)).toEqual(['turn_started']);
    expect(await sentFor('run_raced', 2)).toEqual(['engine_run_event']);
    watch.close();
  } finally {
    tx.release();
  }
});
