import type { Migration } from './migration';

export const migration: Migration = {
  version: 5,
  name: 'run change notifications',
  // API processes LISTEN on these channels (store/runs/change-feed.ts): a long poll wakes when its
  // run's result is written, an event stream when an event is. Triggers rather than NOTIFYs in
  // the writers, so that every writer (activities, the reconciler, a retried step) notifies alike.
  // The payload is the run id (ids are short: far below NOTIFY's 8000-byte limit).
  sql: `
CREATE FUNCTION notify_run_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
PERFORM pg_notify(TG_ARGV[0], NEW.run_id);
RETURN NULL;
END
$$;
CREATE TRIGGER run_results_notify AFTER INSERT ON run_results
FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_ended');
CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_event');
`,
};
