import type { Migration } from './migration';

export const migration: Migration = {
  version: 10,
  name: 'private network flag',
  // Whether the integration's server and OAuth endpoints may be on loopback or private addresses:
  // the operator's decision, which existing integrations have not been given.
  sql: `
ALTER TABLE integrations ADD COLUMN allow_private_network boolean NOT NULL DEFAULT false;
`,
};
