import type { Migration } from './migration';

/** The advisory lock (two int4 keys) a process holds, shared, while it listens for step starts (change-channels.ts). */
export const STARTS_LISTENED_LOCK = [0x6167_656e, 40] as const;

export const migration: Migration = {
  version: 40,
  name: 'progress notifications only while listened for',
  // A step's start (run_started, turn_started, tool_call_started) is announced on engine_run_progress
  // only while some session listens for it. A process that listens holds the advisory lock
  // STARTS_LISTENED_LOCK, shared, from before its LISTEN until after its UNLISTEN (its session's end
  // lets go of it too). The writer tries the same lock, exclusive, for its transaction: got, nobody
  // listens, and the start goes unannounced; refused, someone does (or another writer holds it this
  // moment), and it is announced. No start is missed: a listener's lock waits for a writer that got
  // it to commit, and the listener reads the run's events only once it listens (change-feed.ts), so
  // it finds the unannounced start. Without a listener, most of a run's notifications (half of its
  // events) woke every LISTENing backend of the database for nothing.
  sql: `
CREATE OR REPLACE FUNCTION notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
IF NEW.type NOT IN ('run_started', 'turn_started', 'tool_call_started') THEN
  PERFORM pg_notify('engine_run_event', NEW.run_id);
ELSIF NOT pg_try_advisory_xact_lock(${STARTS_LISTENED_LOCK[0]}, ${STARTS_LISTENED_LOCK[1]}) THEN
  PERFORM pg_notify('engine_run_progress', NEW.run_id);
END IF;
RETURN NULL;
END
$$;
`,
};
