import type { Migration } from './migration';

export const migration: Migration = {
  version: 16,
  name: 'turn drafts',
  // The text of an LLM turn as the model writes it, for event streams that join mid-turn: one row
  // per run and turn, the current attempt's text so far, gone once the turn has ended. Not the
  // durable record (the finished turn is, in run_messages): unlogged, so its many small writes cost
  // no WAL, and a crash that empties it loses only what was on its way to a screen.
  sql: `
CREATE UNLOGGED TABLE run_turn_drafts (
run_id text NOT NULL,
turn integer NOT NULL,
attempt integer NOT NULL,
text text NOT NULL,
updated_at timestamptz NOT NULL DEFAULT now(),
PRIMARY KEY (run_id, turn)
);
`,
};
