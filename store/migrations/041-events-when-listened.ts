import type { Migration } from './migration';

/**
 * The advisory locks a process holds, shared, while it listens for a kind of run event
 * (change-channels.ts): two int4 keys, the first naming the kind, the second one of `LISTENED_BUCKETS`.
 * A listener holds every bucket of its kind; a writer tries its run's bucket alone, so two writers
 * of different buckets never refuse each other (a refused writer sends a spare notification).
 */
export const LISTENED_LOCK_KEYS = { progress: 0x6167_0040, event: 0x6167_0041 } as const;
export const LISTENED_BUCKETS = 16;

const notifyIfListened = (kind: keyof typeof LISTENED_LOCK_KEYS, channel: string) => `
  IF NOT pg_try_advisory_xact_lock(${LISTENED_LOCK_KEYS[kind]}, abs(hashtext(NEW.run_id) % ${LISTENED_BUCKETS})) THEN
    PERFORM pg_notify('${channel}', NEW.run_id);
  END IF;`;

export const migration: Migration = {
  version: 41,
  name: 'event notifications only while listened for',
  // Migration 40's rule, for the rest of a run's events too: a step's end (turn_ended,
  // tool_call_ended), an approval, a run's end event are announced on engine_run_event only while
  // some session listens for them, as a step's start is on engine_run_progress. A listening
  // session holds the kind's locks, shared, from before its LISTEN until after its UNLISTEN (its
  // end lets go of them too); the writer tries its run's bucket of them, exclusive, for its
  // transaction: got, nobody listens, and the event goes unannounced. No event is missed: a
  // listener's lock waits for a writer that got the lock to commit, and the listener reads once
  // it listens. A run's result (engine_run_ended, which long polls wait for), its questions and
  // answers (run_inputs) and caller tools' calls are announced as before, always. The locks are
  // in buckets by run (migration 40 had one lock): writers of different runs at the same moment
  // no longer refuse each other. Without a listener, about five in six of a run's notifications
  // woke every LISTENing backend of the database for nothing.
  sql: `
CREATE OR REPLACE FUNCTION notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
IF NEW.type IN ('run_started', 'turn_started', 'tool_call_started') THEN${notifyIfListened('progress', 'engine_run_progress')}
ELSE${notifyIfListened('event', 'engine_run_event')}
END IF;
RETURN NULL;
END
$$;
`,
};
