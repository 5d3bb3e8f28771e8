import type { Migration } from './migration';

export const migration: Migration = {
  version: 38,
  name: 'replays',
  // A run replayed from another run (POST /v1/runs/:id/replay): the run it replays (its replays
  // are found by its id) and where its tool calls' results come from ("recorded", "live",
  // "recorded-then-live"). model: the run's own model, in place of its agent's (a replay or a fork
  // given one; the forks' migration may have added it already). A replay's call answered from the
  // recording says so on its row: "recorded", with the original's call whose result it took (each
  // taken at most once), or "not_recorded". Expand only.
  sql: `
ALTER TABLE runs ADD COLUMN replay_of_run_id text, ADD COLUMN replay_tools text, ADD COLUMN IF NOT EXISTS model jsonb;
CREATE INDEX runs_replay_of_idx ON runs (replay_of_run_id) WHERE replay_of_run_id IS NOT NULL;
ALTER TABLE run_tool_calls ADD COLUMN replayed text, ADD COLUMN recorded_turn integer, ADD COLUMN recorded_slot integer;
`,
};
