import type { Migration } from './migration';

export const migration: Migration = {
  version: 6,
  name: 'approval of tool calls',
  sql: `
-- {default: "never" | "always" | "unless_read_only", tools?: {<tool>: "never" | "always"}, timeout?: "24h"}; NULL: never ask
ALTER TABLE integrations ADD COLUMN approval jsonb CHECK (approval IS NULL OR jsonb_typeof(approval) = 'object');

-- One row per tool call that waited for a decision. The API reads pending approvals from here,
-- never from the workflow. The arguments stay in run_messages.
CREATE TABLE run_approvals (
run_id text NOT NULL,
turn integer NOT NULL,
slot integer NOT NULL,
tool_call_id text NOT NULL,
name text NOT NULL,
integration_id text,
status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'timed_out', 'cancelled')),
reason text,
-- api | timeout | cancel
resolved_by text,
-- which key the deciding request carried: api | admin | none
key_kind text,
requested_at timestamptz NOT NULL DEFAULT now(),
expires_at timestamptz NOT NULL,
resolved_at timestamptz,
PRIMARY KEY (run_id, turn, slot)
);
CREATE INDEX run_approvals_call_idx ON run_approvals (run_id, tool_call_id);
CREATE INDEX run_approvals_pending_idx ON run_approvals (requested_at) WHERE status = 'pending';
`,
};
