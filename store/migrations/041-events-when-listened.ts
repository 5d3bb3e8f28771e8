import type { Migration } from './migration';
import { STARTS_LISTENED_LOCK } from './040-progress-when-listened';

/**
 * The advisory lock (two int4 keys) a process holds, shared, while it listens for the run events
 * that are not starts (change-channels.ts): its event streams, its /mcp agent calls, and its run
 * view cache while clients poll runs.
 */
export const EVENTS_LISTENED_LOCK = [0x6167_656e, 41] as const;

export const migration: Migration = {
  version: 41,
  name: 'event notifications only while listened for',
  // Migration 40's rule, for the rest of a run's events: a step's end (turn_ended, tool_call_ended),
  // an approval, a run's end event are announced on engine_run_event only while some session
  // listens for them, which it says by holding EVENTS_LISTENED_LOCK, shared, from before its LISTEN
  // until after its UNLISTEN. A run's result (engine_run_ended, which long polls wait for), its
  // questions and answers (run_inputs) and caller tools' calls are announced as before, always.
  // No event is missed: a listener's lock waits for a writer that got the lock to commit, and the
  // listener reads once it listens. Without a listener, about five in six of a run's notifications
  // woke every LISTENing backend of the database for nothing.
  sql: `
CREATE OR REPLACE FUNCTION notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
IF NEW.type IN ('run_started', 'turn_started', 'tool_call_started') THEN
  IF NOT pg_try_advisory_xact_lock(${STARTS_LISTENED_LOCK[0]}, ${STARTS_LISTENED_LOCK[1]}) THEN
    PERFORM pg_notify('engine_run_progress', NEW.run_id);
  END IF;
ELSIF NOT pg_try_advisory_xact_lock(${EVENTS_LISTENED_LOCK[0]}, ${EVENTS_LISTENED_LOCK[1]}) THEN
  PERFORM pg_notify('engine_run_event', NEW.run_id);
END IF;
RETURN NULL;
END
$$;
`,
};
