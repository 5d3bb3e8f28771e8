import type { Migration } from './migration';

export const migration: Migration = {
  version: 13,
  name: 'sampling',
  // A request of an MCP server to sample the run's model (sampling/createMessage). The reviewer
  // (with `approve`) and the model see `request`: the server's messages, its systemPrompt and the
  // capped maxTokens, nothing of the run. The answer stays only until the call carries it back.
  // A 2026-era server's request belongs to a round (store/runs/input-rounds.ts); a 2025-era one
  // waits in its call's activity, which LISTENs on engine_run_input like for a question.
  sql: `
ALTER TABLE integrations ADD COLUMN sampling text NOT NULL DEFAULT 'never' CHECK (sampling IN ('never', 'approve', 'allow'));
ALTER TABLE integrations ADD COLUMN sampling_max_tokens integer NOT NULL DEFAULT 1024 CHECK (sampling_max_tokens BETWEEN 1 AND 1000000);

CREATE TABLE run_samplings (
sampling_id text PRIMARY KEY,
run_id text NOT NULL,
tool_call_id text NOT NULL,
turn integer NOT NULL,
-- the tool call's name as the LLM called it
name text NOT NULL,
integration_id text,
round_id text REFERENCES run_input_rounds(round_id) ON DELETE CASCADE,
request_key text CHECK (request_key IS NULL OR length(request_key) <= 256),
request jsonb NOT NULL,
needs_approval boolean NOT NULL,
-- pending: waits for a reviewer (needs_approval) or for the model; approved: the model may be asked
status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'answered', 'failed', 'timed_out', 'cancelled')),
reason text,
key_kind text,
-- the CreateMessageResult, cleared once the call carried it back
answer jsonb,
error text,
usage jsonb,
requested_at timestamptz NOT NULL DEFAULT now(),
expires_at timestamptz NOT NULL,
resolved_at timestamptz
);
CREATE INDEX run_samplings_run_idx ON run_samplings (run_id, requested_at);
CREATE INDEX run_samplings_round_idx ON run_samplings (round_id) WHERE round_id IS NOT NULL;
CREATE TRIGGER run_samplings_requested_notify AFTER INSERT ON run_samplings
FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_input');
CREATE TRIGGER run_samplings_resolved_notify AFTER UPDATE OF status ON run_samplings
FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_input');
`,
};
