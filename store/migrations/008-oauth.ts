import type { Migration } from './migration';

export const migration: Migration = {
  version: 8,
  name: 'OAuth for remote MCP servers',
  // One row per HTTP integration that needs (or was found to need) the MCP authorization flow.
  // `sealed` holds the registered client, the tokens and the discovery state, sealed under
  // SECRETS_KEY and bound to the row; the plain columns say what the API may show.
  // oauth_states: one row per authorization in progress, keyed by a hash of its `state` (the
  // value itself travels only through the browser), single-use, expiring after 10 minutes.
  sql: `
CREATE TABLE integration_oauth (
id text PRIMARY KEY REFERENCES integrations(id) ON DELETE CASCADE,
status text NOT NULL CHECK (status IN ('required', 'authorized', 'expired')),
sealed jsonb,
scopes text[] NOT NULL DEFAULT '{}',
expires_at timestamptz,
has_refresh_token boolean NOT NULL DEFAULT false,
authorized_at timestamptz,
-- what the server said when it refused (WWW-Authenticate): where its resource metadata is, which scope it wants
challenge jsonb,
updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE oauth_states (
id text PRIMARY KEY,
integration_id text NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
sealed jsonb NOT NULL,
redirect_url text NOT NULL,
created_at timestamptz NOT NULL DEFAULT now(),
expires_at timestamptz NOT NULL,
used_at timestamptz
);
CREATE INDEX oauth_states_integration_idx ON oauth_states (integration_id, created_at);
`,
};
