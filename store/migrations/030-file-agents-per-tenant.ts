import type { Migration } from './migration';

export const migration: Migration = {
  version: 30,
  name: 'file agents per tenant',
  // An agent file defines one agent in each tenant its `tenants` lists (store/agent-files/sync.ts):
  // its path is unique within a tenant, no longer across the engine.
  sql: `
ALTER TABLE agents DROP CONSTRAINT agents_source_file_key;
CREATE UNIQUE INDEX agents_tenant_source_file_key ON agents (tenant_id, source_file);
`,
};
