import type { Migration } from './migration';

export const migration: Migration = {
  version: 34,
  name: 'sampling costs',
  // An MCP server's sampling request answered by the run's model costs tokens like a turn does: its
  // cost (core/pricing.ts), computed by the worker when it answers, kept as run_turns keeps a turn's.
  // NULL cost: not answered, the model was not priced, or the answer is older than this.
  sql: `
ALTER TABLE run_samplings ADD COLUMN provider text;
ALTER TABLE run_samplings ADD COLUMN model text;
ALTER TABLE run_samplings ADD COLUMN cost_usd numeric;
-- GET /v1/usage reads the answers given in a time range.
CREATE INDEX run_samplings_answered_idx ON run_samplings (resolved_at) WHERE status = 'answered';
`,
};
