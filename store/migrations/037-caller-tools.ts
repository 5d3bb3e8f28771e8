import type { Migration } from './migration';

export const migration: Migration = {
  version: 37,
  name: 'caller tools',
  // Tools a run's caller runs itself (core/caller-tools.ts): an agent's default declarations; a
  // run's own, as it started (its schemas stay here, the workflow knows their names only); and
  // each call of one, pending until the caller answers (the answer is kept until the call's result
  // is recorded, then cleared) or the run's callerToolTimeout passes. Tenant-scoped like their run.
  sql: `
ALTER TABLE agents ADD COLUMN caller_tools jsonb CHECK (caller_tools IS NULL OR jsonb_typeof(caller_tools) = 'array');
CREATE TABLE run_caller_tools (
  run_id text PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  tenant_id text NOT NULL REFERENCES tenants(id),
  tools jsonb NOT NULL CHECK (jsonb_typeof(tools) = 'array'),
  timeout_ms integer NOT NULL CHECK (timeout_ms > 0)
);
CREATE TABLE run_caller_tool_calls (
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tool_call_id text NOT NULL,
  tenant_id text NOT NULL REFERENCES tenants(id),
  turn integer NOT NULL,
  slot integer NOT NULL,
  name text NOT NULL,
  arguments jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'timed_out', 'cancelled')),
  answer jsonb,
  is_error boolean,
  answered_by_id text,
  answered_by_name text,
  asked_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  answered_at timestamptz,
  PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX run_caller_tool_calls_pending ON run_caller_tool_calls (tenant_id, asked_at) WHERE status = 'pending';
CREATE TRIGGER run_caller_tool_calls_notify AFTER UPDATE OF status ON run_caller_tool_calls
FOR EACH ROW EXECUTE FUNCTION notify_run_change('engine_run_event');
`,
};
