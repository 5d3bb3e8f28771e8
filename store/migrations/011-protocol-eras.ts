import type { Migration } from './migration';

export const migration: Migration = {
  version: 11,
  name: 'protocol eras',
  // protocol: the era an operator pins, or auto (negotiated). integration_protocol: the negotiated
  // verdict, per integration, for the transport it was probed over (fingerprint: URL, or command and
  // args); a row of its own, so that recording a verdict does not move updated_at (which reconnects pools).
  sql: `
ALTER TABLE integrations ADD COLUMN protocol text NOT NULL DEFAULT 'auto'
  CHECK (protocol IN ('auto', '2025-11-25', '2026-07-28'));
CREATE TABLE integration_protocol (
  id text PRIMARY KEY REFERENCES integrations(id) ON DELETE CASCADE,
  era text NOT NULL CHECK (era IN ('2025-11-25', '2026-07-28')),
  discover jsonb CHECK (discover IS NULL OR octet_length(discover::text) <= 65536),
  fingerprint text NOT NULL,
  probed_at timestamptz NOT NULL DEFAULT now()
);
`,
};
