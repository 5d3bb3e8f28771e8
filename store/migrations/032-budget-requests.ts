import type { Migration } from './migration';

export const migration: Migration = {
  version: 32,
  name: 'budget requests',
  // A run whose reached limit asks a person (limits.onLimit "ask", core/budget-ask.ts): one row per
  // request, keyed by its budget_requested event's number, written by the run's own activities and
  // read by the API (a pending request is never asked of the workflow). Tenant-scoped like its run.
  sql: `
CREATE TABLE run_budget_requests (
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq integer NOT NULL,
  tenant_id text NOT NULL REFERENCES tenants(id),
  limit_reached text NOT NULL,
  spent jsonb NOT NULL,
  limits jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'raised', 'stopped', 'timed_out', 'cancelled')),
  added jsonb,
  decided_by_id text,
  decided_by_name text,
  requested_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  resolved_at timestamptz,
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX run_budget_requests_pending ON run_budget_requests (tenant_id, requested_at) WHERE status = 'pending';
`,
};
