import { createPool, type Db } from '../../store/pool';
import { migrate } from '../../store/migrations';
import { listenForRunChanges, type RunChangeFeed } from '../../store/runs/change-feed';
import { appendEvent, listEvents } from '../../store/runs/events';
import { createRunViewCache, type RunViewCache } from '../../use-cases/runs/run-view-cache';
import { logger } from '../support/engine';
import { ownDatabase } from '../support/own-database';
import { waitFor } from '../support/wait';

/**
 * The API's run object cache follows runs (listens for their events, and keeps objects) only while
 * its clients read runs again: a process whose clients read each run once, or wait for its end,
 * does not listen for the events every step writes, so nobody makes PostgreSQL announce them
 * (migration 41). A database of its own: other files' API processes listen in the shared one.
 */
const database = ownDatabase('view_follow');
let db: Db;
let feed: RunChangeFeed;
let cache: RunViewCache;
const FOLLOW_MS = 600;

beforeAll(async () => {
  await database.create();
  db = createPool(database.url, logger, 4);
  await migrate(db);
  feed = listenForRunChanges(db, logger, { lingerMs: 50 });
  cache = createRunViewCache(feed, { followMs: FOLLOW_MS });
});
afterAll(async () => {
  cache?.close();
  await feed?.close();
  await db?.end();
  await database.drop();
});

/** Reads of the database the cache made: each load reads the run's events for real. */
let loads = 0;
const load = (runId: string) => async () => {
  loads += 1;
  return { id: runId, events: (await listEvents(db, runId)).length };
};
const read = (runId: string, byClient = true) => cache.read(runId, 'default', load(runId), { byClient });
const loadsDuring = async (fn: () => Promise<unknown>) => {
  const before = loads;
  await fn();
  return loads - before;
};
const followsRuns = () => ['event', 'ended', 'input'].every((kind) => feed.status().kinds.includes(kind as never));

test('runs read once, or only as a long poll wakes, are read each time and followed by nobody', async () => {
  await waitFor(async () => feed.status().listening, 10_000, 'the feed to connect');
  expect(await loadsDuring(async () => {
    for (const runId of ['run_a', 'run_b', 'run_c']) await read(runId);
    // A long poll's reads once woken are not its client reading again.
    await read('run_woken');
    await read('run_woken', false);
    await read('run_woken', false);
    // A run just recorded is not kept either: nothing would tell the cache that it changed.
    cache.seed('run_seeded', 'default', { id: 'run_seeded', events: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    await read('run_seeded', false);
  })).toBe(7);
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(feed.status().kinds).toEqual([]);
});

test('a run read again starts following: objects are kept until a change is heard, and followMs without reads ends it', async () => {
  await read('run_polled');
  await read('run_polled');
  await waitFor(async () => followsRuns(), 10_000, 'the cache to follow runs');
  // Kept from the first read that follows, until the run changes.
  expect(await loadsDuring(() => read('run_polled'))).toBe(1);
  expect(await loadsDuring(async () => {
    for (let i = 0; i < 5; i++) expect(await read('run_polled')).toEqual({ id: 'run_polled', events: 0 });
  })).toBe(0);
  // The step's end is announced now that this process listens for events.
  await appendEvent(db, 'run_polled', 1, 'turn_ended', { turn: 1 });
  await waitFor(async () => (await loadsDuring(() => read('run_polled'))) === 1, 10_000, 'a read that finds the change');
  expect(await read('run_polled')).toEqual({ id: 'run_polled', events: 1 });
  // While following, a run just recorded is kept as recorded.
  cache.seed('run_new', 'default', { id: 'run_new', events: 0 });
  await new Promise((resolve) => setImmediate(resolve));
  expect(await loadsDuring(() => read('run_new', false))).toBe(0);

  // Nobody reads: following ends, what was kept goes, and the process stops listening for events.
  await waitFor(async () => !feed.status().kinds.includes('event'), 10_000, 'the cache to stop following');
  expect(feed.status().kinds).toEqual([]);
  expect(await loadsDuring(() => read('run_new', false))).toBe(1);
  await appendEvent(db, 'run_polled', 2, 'turn_ended', { turn: 2 });
  expect(await read('run_polled', false)).toEqual({ id: 'run_polled', events: 2 });
});
