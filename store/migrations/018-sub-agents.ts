import type { Migration } from './migration';

export const migration: Migration = {
  version: 18,
  name: 'sub-agents',
  // An agent's sub-agents (by id, resolved when it is saved); a sub-agent's run knows the run and
  // the tool call that started it, and its root run (whose descendants are bounded); the parent's
  // tool call knows its child; a run's usage with its children's.
  sql: `
ALTER TABLE agents ADD COLUMN sub_agent_ids text[] NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN parent_run_id text, ADD COLUMN parent_tool_call_id text, ADD COLUMN root_run_id text;
CREATE INDEX runs_parent_idx ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX runs_root_idx ON runs (root_run_id) WHERE root_run_id IS NOT NULL;
ALTER TABLE run_tool_calls ADD COLUMN child_run_id text;
ALTER TABLE run_results ADD COLUMN usage_with_children jsonb;
`,
};
