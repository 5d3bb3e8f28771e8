import type { Migration } from './migration';

export const migration: Migration = {
  version: 9,
  name: 'run progress notifications',
  // A step's start (run_started, turn_started, tool_call_started) changes nothing the run object
  // shows: it is announced on a channel of its own, which event streams hear and the API's cache
  // of run objects ignores. Half a run's events were dropping cached objects that had not changed.
  sql: `
CREATE FUNCTION notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
PERFORM pg_notify(CASE WHEN NEW.type IN ('run_started', 'turn_started', 'tool_call_started') THEN 'engine_run_progress' ELSE 'engine_run_event' END, NEW.run_id);
RETURN NULL;
END
$$;
DROP TRIGGER run_events_notify ON run_events;
CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
FOR EACH ROW EXECUTE FUNCTION notify_run_event();
`,
};
