import type { Migration } from './migration';

export const migration: Migration = {
  version: 26,
  name: 'decided by',
  // Who decided a tool call's approval or a sampling request, and who answered a question: the
  // principal's id (an API key's id, `api_key`, `operator`, …) and a name a person recognises,
  // from the caller of the deciding request. NULL for rows from before, for endings nobody decided
  // (timeouts, cancellations), and for decisions made through /mcp. Expand only.
  sql: `
ALTER TABLE run_approvals ADD COLUMN decided_by_id text, ADD COLUMN decided_by_name text;
ALTER TABLE run_samplings ADD COLUMN decided_by_id text, ADD COLUMN decided_by_name text;
ALTER TABLE run_inputs ADD COLUMN decided_by_id text, ADD COLUMN decided_by_name text;
`,
};
