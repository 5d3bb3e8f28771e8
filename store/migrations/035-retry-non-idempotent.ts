import type { Migration } from './migration';

export const migration: Migration = {
  version: 35,
  name: 'retry non-idempotent',
  // Whether the engine retries the integration's tools that are neither read-only nor idempotent:
  // the operator's word that its server deduplicates calls by their idempotency key. Existing
  // integrations have not been given it.
  sql: `
ALTER TABLE integrations ADD COLUMN retry_non_idempotent boolean NOT NULL DEFAULT false;
`,
};
