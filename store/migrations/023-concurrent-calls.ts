import type { Migration } from './migration';

export const migration: Migration = {
  version: 23,
  name: 'concurrent calls',
  // An integration's maxConcurrentCalls (activities/tool-slots.ts): how many of its calls one worker
  // runs at once. Expand only: builds that do not know the column go on as before.
  sql: `
ALTER TABLE integrations ADD COLUMN max_concurrent_calls integer NOT NULL DEFAULT 10 CHECK (max_concurrent_calls BETWEEN 1 AND 1000);
`,
};
