import type { Migration } from './migration';

export const migration: Migration = {
  version: 19,
  name: 'prompt order',
  // An agent's promptOrder (core/prompt-order.ts): integration ids, each one of its integration_ids,
  // whose conventional prompts come first in the prompt prefix.
  sql: `
ALTER TABLE agents ADD COLUMN prompt_order text[] NOT NULL DEFAULT '{}';
`,
};
