import type { Migration } from './migration';

export const migration: Migration = {
  version: 7,
  name: 'run inputs (MCP elicitation)',
  // A question an MCP server asks during a tool call (elicitation/create), waiting for an answer
  // through the API. The worker whose call waits LISTENs on engine_run_input (payload: the run id)
  // and re-reads the row; an insert wakes the run's event streams like a new event does.
  sql: `
CREATE TABLE run_inputs (
input_id text PRIMARY KEY,
run_id text NOT NULL,
tool_call_id text NOT NULL,
mode text NOT NULL CHECK (mode IN ('form', 'url')),
message text NOT NULL,
-- json, not jsonb: the order of the fields is the order a person is asked them in
requested_schema json,
url text,
status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accept', 'decline', 'cancel', 'expired')),
-- the accepted content, sealed under SECRETS_KEY when one is set; cleared once the worker relayed it
answer jsonb,
requested_at timestamptz NOT NULL DEFAULT now(),
expires_at timestamptz NOT NULL,
answered_at timestamptz
);
CREATE INDEX run_inputs_pending_idx ON run_inputs (run_id) WHERE status = 'pending';
CREATE TRIGGER run_inputs_requested_notify AFTER INSERT ON run_inputs
FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_event');
CREATE TRIGGER run_inputs_answered_notify AFTER UPDATE OF status ON run_inputs
FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_input');

ALTER TABLE integrations ADD COLUMN elicitation boolean NOT NULL DEFAULT false;
ALTER TABLE integrations ADD COLUMN elicitation_timeout_ms integer NOT NULL DEFAULT 600000 CHECK (elicitation_timeout_ms > 0);
`,
};
