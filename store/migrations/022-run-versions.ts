import type { Migration } from './migration';

export const migration: Migration = {
  version: 22,
  name: 'run versions',
  // The Worker Deployment build a run's last turn ran on (worker/versioning.ts), for the run object
  // and GET /v1/runs?buildId=. Expand only: builds that do not know these columns go on as before.
  sql: `
ALTER TABLE runs ADD COLUMN deployment_name text, ADD COLUMN build_id text;
CREATE INDEX runs_build_id ON runs (build_id, created_at DESC, id DESC) WHERE build_id IS NOT NULL;
`,
};
