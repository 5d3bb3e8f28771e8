import type { Migration } from './migration';

export const migration: Migration = {
  version: 31,
  name: 'turn costs',
  // A turn's cost (core/pricing.ts), computed by the worker at the turn's end from the price table
  // it had then, and kept: a later price change never rewrites it. NULL cost: the model was not
  // priced (or the turn is older than prices). The provider and model say what was priced.
  sql: `
ALTER TABLE run_turns ADD COLUMN cached_input_tokens integer NOT NULL DEFAULT 0;
ALTER TABLE run_turns ADD COLUMN provider text;
ALTER TABLE run_turns ADD COLUMN model text;
ALTER TABLE run_turns ADD COLUMN cost_usd numeric;
`,
};
