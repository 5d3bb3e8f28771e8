import type { Migration } from './migration';

export const migration: Migration = {
  version: 29,
  name: 'tenant limits',
  // A tenant's caps (docs/security.md "Per-tenant caps"): how many of its runs may run at once, and
  // how many tool calls of its runs one worker runs at once. NULL: no cap. A thread's claim is its
  // run's while the run runs (store/threads/thread-claim.ts), so a tenant's running runs are its
  // claimed threads: counted through a small partial index.
  sql: `
ALTER TABLE tenants ADD COLUMN max_running_runs integer CHECK (max_running_runs BETWEEN 1 AND 1000000);
ALTER TABLE tenants ADD COLUMN tool_call_slots integer CHECK (tool_call_slots BETWEEN 1 AND 10000);
CREATE INDEX threads_running_idx ON threads (tenant_id) WHERE active_run_id IS NOT NULL;
`,
};
