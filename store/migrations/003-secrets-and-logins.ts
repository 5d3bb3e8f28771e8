import type { Migration } from './migration';

export const migration: Migration = {
  version: 3,
  name: 'secrets at rest, per-thread source_query logins',
  sql: `
-- An integration's env and header values, sealed with AES-256-GCM under SECRETS_KEY:
-- {v, kid, iv, data, tag} (base64), bound to the row's id. transport keeps no secret values.
ALTER TABLE integrations ADD COLUMN secrets jsonb CHECK (secrets IS NULL OR jsonb_typeof(secrets) = 'object');

-- The one random secret from which the engine derives the passwords of the per-thread source_query
-- login roles. Only the engine's own user can read it: thread roles are granted nothing here.
CREATE TABLE source_query_login_secret (
only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
secret text NOT NULL
);
REVOKE ALL ON source_query_login_secret FROM PUBLIC;
`,
};
