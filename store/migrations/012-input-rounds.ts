import type { Migration } from './migration';

export const migration: Migration = {
  version: 12,
  name: 'durable input rounds',
  // A round of questions a 2026-era MCP server asked by answering a tool call with input_required:
  // its requestState kept byte for byte (UTF-16 code units, so that any string the server sent comes
  // back unchanged), while the workflow waits with no activity running. Its elicitation requests
  // are run_inputs rows naming the round and the key the server gave each request.
  sql: `
CREATE TABLE run_input_rounds (
round_id text PRIMARY KEY,
run_id text NOT NULL,
tool_call_id text NOT NULL,
round integer NOT NULL CHECK (round BETWEEN 1 AND 8),
request_state bytea CHECK (request_state IS NULL OR octet_length(request_state) <= 262144),
created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX run_input_rounds_run_idx ON run_input_rounds (run_id);
ALTER TABLE run_inputs ADD COLUMN round_id text REFERENCES run_input_rounds(round_id) ON DELETE CASCADE;
ALTER TABLE run_inputs ADD COLUMN request_key text CHECK (request_key IS NULL OR length(request_key) <= 256);
CREATE INDEX run_inputs_round_idx ON run_inputs (round_id) WHERE round_id IS NOT NULL;
`,
};
