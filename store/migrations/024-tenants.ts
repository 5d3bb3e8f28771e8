import type { Migration } from './migration';

export const migration: Migration = {
  version: 24,
  name: 'tenants',
  // Tenants own threads, runs, agents and integrations; what hangs off them (messages, events,
  // approvals, data sources, OAuth tokens) is reached through its owner. Today's rows move into the
  // tenant `default`. Names of agents and integrations become unique per tenant. API keys are
  // stored as their SHA-256; a change to one NOTIFYs every API process, which forgets the keys it
  // has checked (api/principals.ts), so a revoked key is refused at once.
  sql: `
CREATE TABLE tenants (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tenants (id, name) VALUES ('ten_default', 'default');

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants(id),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  roles text[] NOT NULL CHECK (cardinality(roles) > 0 AND roles <@ ARRAY['read', 'run', 'decide', 'manage', 'operate']),
  key_hash bytea NOT NULL UNIQUE,
  created_by text,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at);

CREATE FUNCTION engine_notify_key_change() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('engine_key_change', COALESCE(NEW.id, OLD.id));
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER api_keys_notify AFTER UPDATE OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION engine_notify_key_change();

ALTER TABLE agents ADD COLUMN tenant_id text NOT NULL DEFAULT 'ten_default' REFERENCES tenants(id);
ALTER TABLE integrations ADD COLUMN tenant_id text NOT NULL DEFAULT 'ten_default' REFERENCES tenants(id);
ALTER TABLE threads ADD COLUMN tenant_id text NOT NULL DEFAULT 'ten_default' REFERENCES tenants(id);
ALTER TABLE runs ADD COLUMN tenant_id text NOT NULL DEFAULT 'ten_default' REFERENCES tenants(id);

ALTER TABLE agents DROP CONSTRAINT agents_name_key;
CREATE UNIQUE INDEX agents_tenant_name_key ON agents (tenant_id, name);
ALTER TABLE integrations DROP CONSTRAINT integrations_name_key;
CREATE UNIQUE INDEX integrations_tenant_name_key ON integrations (tenant_id, name);
CREATE INDEX threads_tenant_idx ON threads (tenant_id, created_at DESC, id DESC);
`,
};
