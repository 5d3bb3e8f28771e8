import type { ChatMessage } from '../../core/messages';
import type { ModelConfig } from '../../core/agent-model';
import type { OriginalCall, RecordedCall, ReplayTools } from '../../core/replay';
import { statementName, type Queryable } from '../pool';
import { toRun, type RunRecord, type RunRow, type StartedBy } from './runs';

/**
 * Runs replayed from other runs (migration 38): the statement that records a replay on a thread of
 * its own, and what a replay reads of its original's recording: its snapshots, its calls and their
 * results.
 */

/** A replay to record: a new run, on a new thread, of the original's input. */
export interface NewReplay {
  runId: string;
  threadId: string;
  originalRunId: string;
  agentId: string;
  tools: ReplayTools;
  model?: ModelConfig;
  startedBy: StartedBy;
  /** the eval that replays it (migration 39) */
  evalId?: string;
}

/**
 * SQL, a WITH item after `o` (the original's row) and `run` (the replay's): the caller tools the
 * original declared, declared by the replay, with the original's timeout.
 */
export const CALLER_TOOLS_COPY = `callers AS (
      INSERT INTO run_caller_tools (run_id, tenant_id, tools, timeout_ms)
      SELECT run.id, c.tenant_id, c.tools, c.timeout_ms FROM run, o JOIN run_caller_tools c ON c.run_id = o.id)`;

/**
 * SQL, a WITH item after `o` (the original's row) and `from` (the replay's thread: its id and
 * tenant): the replay's run, the original's input, with the values `recordReplay` gives ($3…$8).
 */
export const replayRunInsert = (from: string) => `run AS (
      INSERT INTO runs (id, thread_id, agent_id, input, tenant_id, started_by, replay_of_run_id, replay_tools, model, eval_id)
      SELECT $3, ${from}.id, $4, o.input, ${from}.tenant_id, $5, o.id, $6, $7, $8 FROM ${from}, o RETURNING *)`;

/**
 * Runs a statement that records a replay (`text`: the WITH items `o`, `run` by replayRunInsert,
 * ending in `SELECT row_to_json(run) AS run FROM run`), with the replay's values: $1 the original,
 * $2 the thread, $3… the run's. Undefined when it recorded no run.
 */
export async function recordReplay(db: Queryable, text: string, r: NewReplay): Promise<RunRecord | undefined> {
  const { rows } = await db.query<{ run: RunRow }>({
    name: statementName(text), text, values: [
      r.originalRunId, r.threadId, r.runId, r.agentId, JSON.stringify(r.startedBy), r.tools, r.model ? JSON.stringify(r.model) : null,
      r.evalId ?? null,
    ],
  });
  return rows[0] && toRun(rows[0].run);
}

/**
 * A replay, in one statement: its thread (the original's tenant and metadata, held by the run
 * from the start), its run (the original's input), the thread's messages from before the
 * original run, in their order, with their times, and the caller tools the original declared.
 * Undefined when the original is gone.
 */
export async function insertReplay(db: Queryable, r: NewReplay): Promise<RunRecord | undefined> {
  const text = `WITH o AS (SELECT id, thread_id, tenant_id, input, created_at FROM runs WHERE id = $1),
    thread AS (
      INSERT INTO threads (id, agent_id, active_run_id, tenant_id, metadata)
      SELECT $2, $4, $3, o.tenant_id, COALESCE((SELECT metadata FROM threads WHERE id = o.thread_id), '{}') FROM o
      RETURNING id, tenant_id),
    ${replayRunInsert('thread')},
    history AS (
      INSERT INTO messages (thread_id, seq, run_id, message, created_at)
      SELECT $2, row_number() OVER (ORDER BY m.seq), m.run_id, m.message, m.created_at FROM o, messages m
      WHERE m.thread_id = o.thread_id AND m.run_id <> o.id AND EXISTS (SELECT 1 FROM run)
        AND NOT EXISTS (SELECT 1 FROM runs later WHERE later.id = m.run_id AND later.created_at > o.created_at)),
    ${CALLER_TOOLS_COPY}
    SELECT row_to_json(run) AS run FROM run`;
  return recordReplay(db, text, r);
}

/** The snapshots of `kinds` a run recorded at its preparation, by kind. */
export async function recordedSnapshots(
  db: Queryable, runId: string, kinds: string[],
): Promise<Record<string, { data: unknown; bytes: number }>> {
  const { rows } = await db.query<{ kind: string; data: unknown; bytes: number }>(
    'SELECT kind, data, bytes FROM run_snapshots WHERE run_id = $1 AND kind = ANY($2)', [runId, kinds],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, { data: r.data, bytes: r.bytes }]));
}

/**
 * Whether a run's preparation was recorded (its discovery, prompt prefix and tools: what a replay
 * starts from), and the integrations its discovery recorded, in order.
 */
export async function recordedPreparation(db: Queryable, runId: string): Promise<{ integrationIds: string[] } | undefined> {
  const text = `SELECT count(*)::int AS kinds,
      (SELECT COALESCE(json_agg(i->>'id' ORDER BY n), '[]') FROM run_snapshots d,
         jsonb_array_elements(d.data->'integrations') WITH ORDINALITY AS x(i, n)
       WHERE d.run_id = $1 AND d.kind = 'discovery') AS integration_ids
    FROM run_snapshots WHERE run_id = $1 AND kind IN ('discovery', 'prefix', 'prepared')`;
  const { rows } = await db.query<{ kinds: number; integration_ids: string[] }>({ name: statementName(text), text, values: [runId] });
  return rows[0].kinds === 3 ? { integrationIds: rows[0].integration_ids } : undefined;
}

/**
 * What matching a replay's turn against its original reads, in one round trip: the turn's calls
 * (its reply's, by index), and the original's calls that have a result, in their order, but for
 * those an earlier turn of the replay took (not this turn's: a match made again after some of its
 * calls were answered must come out the same). A call the engine answered as unknown is not one
 * the original made.
 */
export async function callsToMatch(
  db: Queryable, at: { runId: string; turn: number; originalRunId: string },
): Promise<{ calls: { name: string; arguments: unknown }[]; originals: OriginalCall[] }> {
  const text = `SELECT (SELECT message->'toolCalls' FROM run_messages WHERE run_id = $1 AND turn = $2 AND slot = 0) AS calls,
      (SELECT COALESCE(json_agg(json_build_object('turn', m.turn, 'slot', c.n, 'name', c.call->>'name', 'arguments', c.call->'arguments')
         ORDER BY m.turn, c.n), '[]')
       FROM run_messages m
       CROSS JOIN LATERAL jsonb_array_elements(
         CASE WHEN jsonb_typeof(m.message->'toolCalls') = 'array' THEN m.message->'toolCalls' ELSE '[]' END) WITH ORDINALITY AS c(call, n)
       JOIN run_tool_calls t ON t.run_id = m.run_id AND t.turn = m.turn AND t.slot = c.n
       WHERE m.run_id = $3 AND m.slot = 0 AND m.turn >= 1 AND t.type <> 'unknown'
         AND NOT EXISTS (SELECT 1 FROM run_tool_calls r WHERE r.run_id = $1 AND r.turn < $2 AND r.replayed = 'recorded'
           AND r.recorded_turn = m.turn AND r.recorded_slot = c.n)) AS originals`;
  const { rows } = await db.query<{ calls: { name: string; arguments: unknown }[] | null; originals: OriginalCall[] }>({
    name: statementName(text), text, values: [at.runId, at.turn, at.originalRunId],
  });
  return { calls: rows[0].calls ?? [], originals: rows[0].originals };
}

/** A recorded call's result as the original stored it: its whole text, and what its row says of it. */
export interface RecordedResult {
  content: string;
  status: 'ok' | 'error';
  type: string;
  integrationId: string | null;
  /** the stored preview: what a handler restores an outcome from (an imported CSV) */
  preview: string;
}

export async function recordedResult(db: Queryable, runId: string, call: RecordedCall): Promise<RecordedResult | undefined> {
  type Row = { message: ChatMessage; status: 'ok' | 'error'; type: string; integration_id: string | null; result_preview: string };
  const { rows } = await db.query<Row>(
    `SELECT m.message, t.status, t.type, t.integration_id, t.result_preview FROM run_messages m
     JOIN run_tool_calls t ON t.run_id = m.run_id AND t.turn = m.turn AND t.slot = m.slot
     WHERE m.run_id = $1 AND m.turn = $2 AND m.slot = $3`,
    [runId, call.turn, call.slot],
  );
  const r = rows[0];
  if (!r || r.message.role !== 'tool') return undefined;
  return { content: r.message.content, status: r.status, type: r.type, integrationId: r.integration_id, preview: r.result_preview };
}
