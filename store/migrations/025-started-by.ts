import type { Migration } from './migration';

export const migration: Migration = {
  version: 25,
  name: 'started by',
  // Who started a run (the run object's startedBy): the principal's id and name, as {principalId, name}.
  // NULL for runs started before. A sub-agent's run carries its root's. Expand only: builds that do
  // not know the column go on as before.
  sql: `
ALTER TABLE runs ADD COLUMN started_by jsonb;
`,
};
