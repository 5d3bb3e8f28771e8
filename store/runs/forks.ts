import type { ChatMessage } from '../../core/messages';
import type { ModelConfig } from '../../core/agent-model';
import type { TurnOutline } from '../../core/fork';
import { statementName, type Queryable } from '../pool';
import { storableJsonText } from '../storable-text';
import { toRun, type RunRecord, type RunRow, type StartedBy } from './runs';

/**
 * Runs forked from other runs (migration 36): what a fork reads of its original's recorded state,
 * and the one statement that records a fork with the conversation it starts from.
 */

/** A run's transcript in outline (turns 1 on): each reply's tool calls, and how many results are stored. */
export async function transcriptOutline(db: Queryable, runId: string): Promise<TurnOutline[]> {
  const text = `SELECT m.turn,
      COALESCE((SELECT json_agg(json_build_object('id', c->>'id', 'name', c->>'name') ORDER BY n)
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.message->'toolCalls') = 'array' THEN m.message->'toolCalls' ELSE '[]' END)
          WITH ORDINALITY AS t(c, n)), '[]') AS calls,
      (SELECT count(*)::int FROM run_messages r WHERE r.run_id = m.run_id AND r.turn = m.turn AND r.slot > 0) AS results
    FROM run_messages m WHERE m.run_id = $1 AND m.slot = 0 AND m.turn >= 1 ORDER BY m.turn`;
  const { rows } = await db.query<TurnOutline>({ name: statementName(text), text, values: [runId] });
  return rows;
}

/** A run of a run's line: the run, the run it was forked from, and so on; each with where it was forked. */
export interface LineRun {
  id: string;
  /** its first own turn (1 unless forked) */
  firstTurn: number;
  /** the step cursor at its first own turn (0 unless forked) */
  firstStep: number;
}

/** The run and the runs its conversation came from, newest first (bounded: a line is a few forks long). */
export async function forkLine(db: Queryable, runId: string): Promise<LineRun[]> {
  const text = `WITH RECURSIVE line AS (
      SELECT id, forked_from_run_id, forked_from_turn, forked_from_step, 0 AS depth FROM runs WHERE id = $1
      UNION ALL
      SELECT r.id, r.forked_from_run_id, r.forked_from_turn, r.forked_from_step, line.depth + 1
      FROM runs r JOIN line ON r.id = line.forked_from_run_id WHERE line.depth < 1000)
    SELECT id, COALESCE(forked_from_turn, 1) AS first_turn, COALESCE(forked_from_step, 0) AS first_step FROM line ORDER BY depth`;
  const { rows } = await db.query<{ id: string; first_turn: number; first_step: number }>({
    name: statementName(text), text, values: [runId],
  });
  return rows.map((r) => ({ id: r.id, firstTurn: r.first_turn, firstStep: r.first_step }));
}

/** The run of a line that played `turn`: the newest whose own turns reach back to it. */
export const ownerOfTurn = (line: LineRun[], turn: number): LineRun => line.find((r) => r.firstTurn <= turn) ?? line[line.length - 1];

/**
 * The scripted provider's step cursor at the start of `turn` of the run whose line is `line`: its
 * owner's cursor at its first turn, one step per turn since, and one per sampling request the model
 * answered in those turns (workflows/sampling-steps.ts counts the same).
 */
export async function stepAtTurn(db: Queryable, line: LineRun[], turn: number): Promise<number> {
  const owner = ownerOfTurn(line, turn);
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM run_samplings WHERE run_id = $1 AND status = 'answered' AND turn >= $2 AND turn < $3`,
    [owner.id, owner.firstTurn, turn],
  );
  return owner.firstStep + (turn - owner.firstTurn) + rows[0].n;
}

/**
 * The bound on a result of each call (by id, with its turn): its integration's maxResultBytes, as
 * the call of the line's run that played it recorded it; absent for a call without an integration.
 */
export async function resultBounds(
  db: Queryable, line: LineRun[], calls: { toolCallId: string; turn: number }[],
): Promise<Map<string, number>> {
  if (calls.length === 0) return new Map();
  const { rows } = await db.query<{ tool_call_id: string; max_result_bytes: string }>(
    `SELECT c.tool_call_id, i.max_result_bytes FROM unnest($1::text[], $2::text[]) AS q(run_id, tool_call_id)
     JOIN run_tool_calls c ON c.run_id = q.run_id AND c.tool_call_id = q.tool_call_id
     JOIN integrations i ON i.id = c.integration_id`,
    [calls.map((c) => ownerOfTurn(line, c.turn).id), calls.map((c) => c.toolCallId)],
  );
  return new Map(rows.map((r) => [r.tool_call_id, Number(r.max_result_bytes)]));
}

/** A fork to record: the new run on a new thread, and the conversation it starts from. */
export interface NewFork {
  runId: string;
  threadId: string;
  originalRunId: string;
  agentId: string;
  input: string;
  atTurn: number;
  step: number;
  model?: ModelConfig;
  startedBy: StartedBy;
  /** the original's results replaced, each a whole message at its place */
  replaced: { turn: number; slot: number; message: ChatMessage }[];
}

/**
 * A fork, in one statement: its thread (the original's tenant and metadata, held by the run), its
 * run, the thread's messages from before the original run, the original's transcript before
 * `atTurn` with `replaced` in place of those results and the input as turn 0, and the original's
 * prompt prefix. Messages keep their original times: the data sources a fork copies are those
 * imported by then (sources/csv/thread-copies.ts).
 */
export async function insertFork(db: Queryable, f: NewFork): Promise<RunRecord> {
  const text = `WITH o AS (SELECT id, thread_id, tenant_id, created_at FROM runs WHERE id = $1),
    thread AS (
      INSERT INTO threads (id, agent_id, active_run_id, tenant_id, metadata, forked_from_run_id, forked_from_turn)
      SELECT $2, $4, $3, o.tenant_id, (SELECT metadata FROM threads WHERE id = o.thread_id), o.id, $6 FROM o
      RETURNING id, tenant_id),
    run AS (
      INSERT INTO runs (id, thread_id, agent_id, input, tenant_id, started_by,
                        forked_from_run_id, forked_from_turn, forked_from_step, model)
      SELECT $3, thread.id, $4, $5, thread.tenant_id, $8, $1, $6, $7, $9 FROM thread RETURNING *),
    history AS (
      INSERT INTO messages (thread_id, seq, run_id, message, created_at)
      SELECT $2, row_number() OVER (ORDER BY m.seq), m.run_id, m.message, m.created_at FROM o, messages m
      WHERE m.thread_id = o.thread_id AND m.run_id <> o.id AND EXISTS (SELECT 1 FROM run)
        AND NOT EXISTS (SELECT 1 FROM runs later WHERE later.id = m.run_id AND later.created_at > o.created_at)),
    replaced AS (SELECT * FROM unnest($10::int[], $11::int[], $12::jsonb[], $13::int[]) AS r(turn, slot, message, bytes)),
    transcript AS (
      INSERT INTO run_messages (run_id, turn, slot, message, bytes, created_at)
      SELECT $3, m.turn, m.slot, COALESCE(r.message, m.message), COALESCE(r.bytes, m.bytes), m.created_at
      FROM run_messages m LEFT JOIN replaced r ON r.turn = m.turn AND r.slot = m.slot
      WHERE m.run_id = $1 AND m.turn >= 1 AND m.turn < $6 AND EXISTS (SELECT 1 FROM run)
      UNION ALL SELECT $3, 0, 0, $14::jsonb, $15::int, now() FROM run),
    prefix AS (
      INSERT INTO run_snapshots (run_id, kind, data, bytes)
      SELECT $3, s.kind, s.data, s.bytes FROM run_snapshots s WHERE s.run_id = $1 AND s.kind = 'prefix' AND EXISTS (SELECT 1 FROM run))
    SELECT row_to_json(run) AS run FROM run`;
  const inputMessage = storableJsonText({ role: 'user', content: f.input } satisfies ChatMessage);
  const replacedJson = f.replaced.map((r) => storableJsonText(r.message));
  const { rows } = await db.query<{ run: RunRow }>({
    name: statementName(text), text, values: [
      f.originalRunId, f.threadId, f.runId, f.agentId, f.input, f.atTurn, f.step, JSON.stringify(f.startedBy),
      f.model ? JSON.stringify(f.model) : null,
      f.replaced.map((r) => r.turn), f.replaced.map((r) => r.slot), replacedJson, replacedJson.map((j) => Buffer.byteLength(j)),
      inputMessage, Buffer.byteLength(inputMessage),
    ],
  });
  if (!rows[0]) throw new Error(`Run ${f.originalRunId} went away while it was forked`);
  return toRun(rows[0].run);
}

/**
 * What insertFork wrote of a fork whose workflow could not be started, once its run is gone
 * (start-run.ts deleteUnstartedRun takes the run, and the thread with its messages): its transcript and prefix.
 */
export async function forgetUnstartedFork(db: Queryable, runId: string): Promise<void> {
  await db.query(
    `WITH transcript AS (DELETE FROM run_messages WHERE run_id = $1 AND NOT EXISTS (SELECT 1 FROM runs WHERE id = $1))
     DELETE FROM run_snapshots WHERE run_id = $1 AND NOT EXISTS (SELECT 1 FROM runs WHERE id = $1)`,
    [runId],
  );
}
