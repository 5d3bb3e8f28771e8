import type { Migration } from './migration';

export const migration: Migration = {
  version: 14,
  name: 'tool calls as tasks',
  // A tool call its server runs as a task (MCP tasks): the serialized reference the workflow's
  // polls use, on any worker, while no activity runs. The row goes with the run's other rows; its
  // reference is the server's handle, not a secret (the integration's credentials are needed to use it).
  sql: `
ALTER TABLE integrations ADD COLUMN task_timeout_ms integer NOT NULL DEFAULT 3600000 CHECK (task_timeout_ms BETWEEN 1000 AND 86400000);

CREATE TABLE run_tool_tasks (
task_ref_id text PRIMARY KEY,
run_id text NOT NULL,
tool_call_id text NOT NULL,
turn integer NOT NULL,
slot integer NOT NULL,
integration_id text NOT NULL,
reference text NOT NULL CHECK (octet_length(reference) <= 8192),
status text NOT NULL DEFAULT 'working' CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled', 'timed_out')),
polls integer NOT NULL DEFAULT 0,
-- a digest of the last questions the task asked (their round was relayed): the same ones seen again wait for the server to move on
last_asked text,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
UNIQUE (run_id, turn, slot)
);
`,
};
