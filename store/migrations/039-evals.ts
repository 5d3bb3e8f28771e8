import type { Migration } from './migration';

export const migration: Migration = {
  version: 39,
  name: 'evals',
  // Evaluations (POST /v1/evals): an eval of the tenant, and each run it replays, by its index:
  // which group it replays in (a thread's runs, in order, on one new thread), what it is expected to
  // do, its replay's run (its id derives from the eval's and the index) and, once scored, whether it
  // passed, the expectations it failed and how its tool calls differ from the original's. A run an
  // eval started says so (eval_id). Expand only.
  sql: `
CREATE TABLE evals (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants(id),
  name text NOT NULL,
  status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  tools text NOT NULL,
  agent_id text,
  model jsonb,
  started_by jsonb,
  error jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz
);
CREATE INDEX evals_tenant_created_idx ON evals (tenant_id, created_at DESC, id DESC);
CREATE TABLE eval_runs (
  eval_id text NOT NULL REFERENCES evals(id) ON DELETE CASCADE,
  idx integer NOT NULL,
  grp integer NOT NULL,
  original_run_id text NOT NULL,
  expect jsonb NOT NULL DEFAULT '{}',
  replay_run_id text,
  passed boolean,
  failed jsonb,
  tool_changes jsonb,
  PRIMARY KEY (eval_id, idx)
);
ALTER TABLE runs ADD COLUMN eval_id text;
CREATE INDEX runs_eval_idx ON runs (eval_id) WHERE eval_id IS NOT NULL;
`,
};
