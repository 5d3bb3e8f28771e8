import type { Db } from '../../store/pool';

/**
 * `bench:load --floor=durable`: the floor with a database of record, the least a durable program
 * writes for the same run shape. Its client inserts the run's row before it starts the workflow;
 * each step's activity writes one statement when it begins (its start, and what it reads: a turn
 * the run's steps so far, a call its arguments) and one when it ends (its result), on a table of
 * its own in the engine's database, with the engine's commit rules (a start is progress,
 * `synchronous_commit` off; a result is committed before the activity answers). It has no API, no
 * notifications, no tenants, no events for streams: what it costs beyond the bare floor is what
 * the statements themselves cost.
 */

const TABLES = `CREATE TABLE IF NOT EXISTS floor_runs (id text PRIMARY KEY, input text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS floor_steps (id bigserial PRIMARY KEY, run_id text NOT NULL, kind text NOT NULL, data jsonb NOT NULL);
  CREATE INDEX IF NOT EXISTS floor_steps_run ON floor_steps (run_id, id)`;

const RUN = 'INSERT INTO floor_runs (id, input) VALUES ($1, $2)';

/** A turn's start: its event, and the run's steps so far (what an LLM would read). */
const TURN_BEGIN = `WITH progress AS (SELECT set_config('synchronous_commit', 'off', true)),
    started AS (INSERT INTO floor_steps (run_id, kind, data) SELECT $1, 'turn_started', $2 FROM progress)
  SELECT coalesce(json_agg(data ORDER BY id), '[]') AS steps FROM floor_steps WHERE run_id = $1`;

/** A call's start: its event, and the arguments its turn's reply stored. */
const CALL_BEGIN = `WITH progress AS (SELECT set_config('synchronous_commit', 'off', true)),
    started AS (INSERT INTO floor_steps (run_id, kind, data) SELECT $1, 'call_started', $2 FROM progress)
  SELECT data FROM floor_steps WHERE run_id = $1 AND kind = 'reply' ORDER BY id DESC LIMIT 1`;

const STEP_END = 'INSERT INTO floor_steps (run_id, kind, data) VALUES ($1, $2, $3)';

const named = (name: string, text: string, values: unknown[]) => ({ name: `floor_${name}`, text, values });

export interface FloorRecords {
  beginTurn(runId: string, turn: number): Promise<void>;
  endTurn(runId: string, reply: unknown): Promise<void>;
  beginCall(runId: string, call: string): Promise<void>;
  endCall(runId: string, call: string, result: string): Promise<void>;
}

export async function createFloorTables(db: Db): Promise<void> {
  await db.query(TABLES);
}

export async function insertFloorRun(db: Db, runId: string, input: string): Promise<void> {
  await db.query(named('run', RUN, [runId, input]));
}

export function floorRecords(db: Db): FloorRecords {
  return {
    async beginTurn(runId, turn) {
      await db.query(named('turn_begin', TURN_BEGIN, [runId, JSON.stringify({ turn })]));
    },
    async endTurn(runId, reply) {
      await db.query(named('step_end', STEP_END, [runId, 'reply', JSON.stringify(reply)]));
    },
    async beginCall(runId, call) {
      await db.query(named('call_begin', CALL_BEGIN, [runId, JSON.stringify({ call })]));
    },
    async endCall(runId, call, result) {
      await db.query(named('step_end', STEP_END, [runId, 'result', JSON.stringify({ call, result })]));
    },
  };
}
