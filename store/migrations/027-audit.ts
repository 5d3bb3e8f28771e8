import type { Migration } from './migration';

export const migration: Migration = {
  version: 27,
  name: 'audit',
  // Who did what (docs/security.md, Audit log): one row for each act of manage, decide or operate,
  // and for each write of the operator, written by the API (api/audit-hook.ts) before it answers.
  // Never a request's or a response's body. The id orders the rows and is the cursor of
  // GET /v1/audit; (tenant_id, id) serves a tenant's pages, the primary key the operator's. `at` keeps
  // milliseconds, as the API writes times, so that `after=<an event's at>` leaves that event out.
  sql: `
CREATE TABLE audit_events (
  id bigserial PRIMARY KEY,
  tenant_id text NOT NULL,
  principal_id text NOT NULL,
  principal_name text NOT NULL,
  action text NOT NULL,
  target text,
  address text,
  at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_tenant_idx ON audit_events (tenant_id, id);
`,
};
