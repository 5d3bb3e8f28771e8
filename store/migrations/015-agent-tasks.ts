import type { Migration } from './migration';

export const migration: Migration = {
  version: 15,
  name: 'agent runs as MCP tasks',
  // An agent run an MCP client started as a task (the task's id is the run's): who may see it (the
  // scope of the key that started it), how long it is kept as a task and how often to poll. The run
  // itself is the task's state. agents.mcp_tasks false: the agent is never run as a task.
  sql: `
ALTER TABLE agents ADD COLUMN mcp_tasks boolean NOT NULL DEFAULT true;

CREATE TABLE agent_tasks (
run_id text PRIMARY KEY,
scope text NOT NULL CHECK (scope IN ('api', 'admin', 'local')),
ttl_ms bigint NOT NULL CHECK (ttl_ms > 0),
poll_ms integer NOT NULL CHECK (poll_ms > 0),
created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_tasks_scope_idx ON agent_tasks (scope, created_at DESC, run_id DESC);
`,
};
