import type { Expectation } from '../../core/eval';
import type { ScoredRun, ToolCallChanges } from '../../core/eval-scoring';
import type { Usage } from '../../core/messages';
import { statementName, type Queryable } from '../pool';

/**
 * What an eval's runs did: the original's and the replay's results side by side, read from their
 * runs (run_results, their calls from run_messages), and each replay's score once written.
 */

/** A run's result as an eval reads it. */
export interface EvalRunResult extends ScoredRun {
  usage: Usage;
}

export interface EvalRunFacts {
  index: number;
  group: number;
  originalRunId: string;
  expect: Expectation;
  replayRunId: string | null;
  /** the replay's run is recorded (it may still run: then `replay` is null) */
  replayRecorded: boolean;
  replayThreadId: string | null;
  original: EvalRunResult | null;
  replay: EvalRunResult | null;
  score: { passed: boolean; failed: string[]; toolChanges: ToolCallChanges } | null;
}

/** A run's result and calls (name, arguments cut at 2000 characters) as JSON; its output cut at $2 characters unless $2 is null. */
const resultOf = (runId: string) => `(SELECT json_build_object('status', x.status, 'stopReason', x.stop_reason,
    'output', CASE WHEN $2::int IS NULL THEN x.output ELSE left(x.output, $2::int) END, 'turns', x.turns, 'usage', x.usage,
    'toolCalls', (SELECT COALESCE(json_agg(json_build_object('name', c.call->>'name', 'arguments', left((c.call->'arguments')::text, 2000))
        ORDER BY m.turn, c.n), '[]')
      FROM run_messages m CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(m.message->'toolCalls') = 'array' THEN m.message->'toolCalls' ELSE '[]' END) WITH ORDINALITY AS c(call, n)
      WHERE m.run_id = x.run_id AND m.slot = 0))
  FROM run_results x WHERE x.run_id = ${runId})`;

const FACTS_SQL = `SELECT er.idx, er.grp, er.original_run_id, er.expect, er.replay_run_id, p.id IS NOT NULL AS replay_recorded,
    p.thread_id AS replay_thread_id, er.passed, er.failed, er.tool_changes,
    ${resultOf('er.original_run_id')} AS original, ${resultOf('er.replay_run_id')} AS replay
  FROM eval_runs er LEFT JOIN runs p ON p.id = er.replay_run_id
  WHERE er.eval_id = $1 ORDER BY er.idx`;

interface FactsRow {
  idx: number; grp: number; original_run_id: string; expect: Expectation; replay_run_id: string | null; replay_recorded: boolean;
  replay_thread_id: string | null; passed: boolean | null; failed: string[] | null; tool_changes: ToolCallChanges | null;
  original: EvalRunResult | null; replay: EvalRunResult | null;
}

/** The eval's runs in their order, their outputs cut at `outputChars` (undefined: whole). */
export async function evalRunFacts(db: Queryable, evalId: string, outputChars?: number): Promise<EvalRunFacts[]> {
  const { rows } = await db.query<FactsRow>({ name: statementName(FACTS_SQL), text: FACTS_SQL, values: [evalId, outputChars ?? null] });
  return rows.map((r) => ({
    index: r.idx, group: r.grp, originalRunId: r.original_run_id, expect: r.expect, replayRunId: r.replay_run_id,
    replayRecorded: r.replay_recorded, replayThreadId: r.replay_thread_id, original: r.original, replay: r.replay,
    score: r.passed === null ? null
      : { passed: r.passed, failed: r.failed ?? [], toolChanges: r.tool_changes ?? { added: [], removed: [], changed: [] } },
  }));
}

/** The eval's groups: for each run by index, its group (the workflow's plan). */
export async function evalGroups(db: Queryable, evalId: string): Promise<number[]> {
  const { rows } = await db.query<{ grp: number }>('SELECT grp FROM eval_runs WHERE eval_id = $1 ORDER BY idx', [evalId]);
  return rows.map((r) => r.grp);
}

/** Writes the replays' scores (a rescore writes the same). */
export async function storeScores(
  db: Queryable, evalId: string, scores: { index: number; passed: boolean; failed: string[]; toolChanges: ToolCallChanges }[],
): Promise<void> {
  const text = `UPDATE eval_runs er SET passed = s.passed, failed = s.failed, tool_changes = s.tool_changes
    FROM jsonb_to_recordset($2::jsonb) AS s(idx int, passed boolean, failed jsonb, tool_changes jsonb)
    WHERE er.eval_id = $1 AND er.idx = s.idx`;
  const rows = scores.map((s) => ({ idx: s.index, passed: s.passed, failed: s.failed, tool_changes: s.toolChanges }));
  await db.query({ name: statementName(text), text, values: [evalId, JSON.stringify(rows)] });
}

/** A run an eval may replay: the tenant's, ended, and not a sub-agent's. */
export interface ReplayableRun {
  id: string;
  threadId: string;
  ended: boolean;
  subAgent: boolean;
}

/** The tenant's runs among `ids` (another tenant's read as none), by id. */
export async function findReplayableRuns(db: Queryable, tenantId: string, ids: string[]): Promise<Map<string, ReplayableRun>> {
  const { rows } = await db.query<{ id: string; thread_id: string; ended: boolean; sub_agent: boolean }>(
    `SELECT r.id, r.thread_id, EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = r.id) AS ended,
       r.parent_run_id IS NOT NULL AS sub_agent
     FROM runs r WHERE r.id = ANY($1) AND r.tenant_id = $2`, [ids, tenantId],
  );
  return new Map(rows.map((r) => [r.id, { id: r.id, threadId: r.thread_id, ended: r.ended, subAgent: r.sub_agent }]));
}

/**
 * The runs of the tenant's threads among `ids`, each thread's in their order (sub-agents' aside),
 * by thread; a thread with none is absent.
 */
export async function threadRunsOf(db: Queryable, tenantId: string, threadIds: string[]): Promise<Map<string, ReplayableRun[]>> {
  const { rows } = await db.query<{ id: string; thread_id: string; ended: boolean }>(
    `SELECT r.id, r.thread_id, EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = r.id) AS ended
     FROM runs r JOIN threads t ON t.id = r.thread_id
     WHERE t.id = ANY($1) AND t.tenant_id = $2 AND r.parent_run_id IS NULL ORDER BY r.created_at, r.id`, [threadIds, tenantId],
  );
  const byThread = new Map<string, ReplayableRun[]>();
  for (const r of rows) {
    const runs = byThread.get(r.thread_id) ?? [];
    runs.push({ id: r.id, threadId: r.thread_id, ended: r.ended, subAgent: false });
    byThread.set(r.thread_id, runs);
  }
  return byThread;
}
