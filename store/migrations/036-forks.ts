import type { Migration } from './migration';

export const migration: Migration = {
  version: 36,
  name: 'forks',
  // A run forked from another run's turn (POST /v1/runs/:id/fork), and the thread made for it: the
  // run and the turn it was forked from. A fork's own turns are numbered from that turn; its
  // forked_from_step is the scripted provider's step cursor at its first turn, carried from the
  // original. model: the run's own model, in place of its agent's (a fork given one); NULL: its
  // agent's. Expand only: builds that do not know the columns go on as before.
  sql: `
ALTER TABLE runs ADD COLUMN forked_from_run_id text, ADD COLUMN forked_from_turn integer, ADD COLUMN forked_from_step integer,
  ADD COLUMN model jsonb;
ALTER TABLE threads ADD COLUMN forked_from_run_id text, ADD COLUMN forked_from_turn integer;
`,
};
