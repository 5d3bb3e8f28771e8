import type { Migration } from './migration';

export const migration: Migration = {
  version: 33,
  name: 'usage and waiting indexes',
  // GET /v1/usage (store/usage.ts) reads the turns completed in [from, to): without an index on
  // completed_at it scans every turn ever run. Turns in flight (NULL) are never asked for.
  // The runs_waiting gauge (store/runs/waiting-runs.ts) and the run object's pending flag read the
  // sampling requests waiting for a reviewer, a handful among every request ever made.
  // Built in the migration's transaction (not CONCURRENTLY): writes to these tables wait for the build.
  sql: `
CREATE INDEX run_turns_completed_idx ON run_turns (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX run_samplings_pending_approval_idx ON run_samplings (run_id) WHERE status = 'pending' AND needs_approval;
`,
};
