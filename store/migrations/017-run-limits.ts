import type { Migration } from './migration';

export const migration: Migration = {
  version: 17,
  name: 'run limits',
  // An agent's budget per run (core/run-limits.ts), as the API took it; and which limit stopped a
  // run whose stop reason is "budget".
  sql: `
ALTER TABLE agents ADD COLUMN limits jsonb;
ALTER TABLE run_results ADD COLUMN limit_reached text;
`,
};
