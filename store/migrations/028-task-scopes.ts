import type { Migration } from './migration';

export const migration: Migration = {
  version: 28,
  name: 'task scopes per tenant',
  // An MCP task's scope is the kind of key that started it (api, admin, local) within its tenant:
  // bare in the tenant `default`, as before tenants, `<tenant id>:<kind>` in another (mcp-server/method-roles.ts).
  sql: `
ALTER TABLE agent_tasks DROP CONSTRAINT agent_tasks_scope_check;
ALTER TABLE agent_tasks ADD CONSTRAINT agent_tasks_scope_check CHECK (scope ~ '^(ten_[A-Za-z0-9_]{1,64}:)?(api|admin|local)$');
`,
};
