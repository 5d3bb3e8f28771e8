import type { Migration } from './migration';

export const migration: Migration = {
  version: 20,
  name: 'prompt conditions',
  // An agent's promptWhen (core/prompt-conditions.ts): integration id to the condition on its
  // optional conventional prompts; a thread's metadata, which such conditions may test.
  sql: `
ALTER TABLE agents ADD COLUMN prompt_when jsonb NOT NULL DEFAULT '{}';
ALTER TABLE threads ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}';
`,
};
