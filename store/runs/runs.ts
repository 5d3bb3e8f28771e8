import type { ModelConfig } from '../../core/agent-model';
import type { ForkedFrom } from '../../core/fork';
import type { ReplayOf, ReplayTools } from '../../core/replay';
import type { Queryable } from '../pool';

/** A run's record (runs): its thread, agent and input, written when it starts. */

/** Who started a run (migration 25): a principal's id and name; null for runs started before. */
export interface StartedBy {
  principalId: string;
  name: string;
}

export interface RunRecord {
  id: string;
  /** the tenant the run belongs to (migration 24): its thread's */
  tenantId: string;
  threadId: string;
  agentId: string;
  input: string;
  idempotencyKey: string | null;
  requestHash: string | null;
  createdAt: string;
  startedBy: StartedBy | null;
  /** a fork (migration 36): the run and turn it was forked from, and the step cursor at its first turn */
  forkedFrom?: ForkedFrom & { step: number };
  /** a replay (migration 38): the run it replays, and where its calls' results come from */
  replayOf?: ReplayOf;
  /** the run's own model, in place of its agent's (a fork or a replay given one) */
  model?: ModelConfig;
}

export interface RunRow {
  id: string; thread_id: string; agent_id: string; input: string; idempotency_key: string | null;
  request_hash: string | null; tenant_id: string; started_by: StartedBy | null;
  forked_from_run_id?: string | null; forked_from_turn?: number | null; forked_from_step?: number | null;
  replay_of_run_id?: string | null; replay_tools?: ReplayTools | null; model?: ModelConfig | null;
  /** a Date from the driver, text from row_to_json */
  created_at: Date | string;
}

export const toRun = (r: RunRow): RunRecord => ({
  id: r.id, threadId: r.thread_id, agentId: r.agent_id, input: r.input, idempotencyKey: r.idempotency_key,
  requestHash: r.request_hash, createdAt: new Date(r.created_at).toISOString(), tenantId: r.tenant_id, startedBy: r.started_by ?? null,
  ...(r.forked_from_run_id
    ? { forkedFrom: { runId: r.forked_from_run_id, turn: r.forked_from_turn ?? 1, step: r.forked_from_step ?? 0 } }
    : {}),
  ...(r.replay_of_run_id ? { replayOf: { runId: r.replay_of_run_id, tools: r.replay_tools ?? 'recorded' } } : {}),
  ...(r.model ? { model: r.model } : {}),
});

/** The agent as the run uses it: with the run's own model, when it has one (a fork or a replay given one). */
export const withRunModel = <A extends { model: ModelConfig }>(agent: A, run: { model?: ModelConfig | null }): A =>
  (run.model ? { ...agent, model: run.model } : agent);

/** SQL: the run $1's own model as {model}, to put over its agent's (`to_jsonb(a) || RUN_MODEL`); {} when it has none. */
export const RUN_MODEL = `COALESCE((SELECT jsonb_build_object('model', model) FROM runs WHERE id = $1 AND model IS NOT NULL), '{}')`;

/** A run to record: its tenant is its thread's. */
export type NewRun = Omit<RunRecord, 'createdAt' | 'tenantId' | 'startedBy' | 'forkedFrom' | 'replayOf' | 'model'>
  & { startedBy?: StartedBy | null };

/** Returns undefined when a run with this id already exists (a concurrent Idempotency-Key request won). */
export async function insertRun(db: Queryable, run: NewRun): Promise<RunRecord | undefined> {
  const { rows } = await db.query<RunRow>(
    `INSERT INTO runs (id, thread_id, agent_id, input, idempotency_key, request_hash, tenant_id, started_by)
     SELECT $1, t.id, $3, $4, $5, $6, t.tenant_id, $7 FROM threads t WHERE t.id = $2 ON CONFLICT (id) DO NOTHING RETURNING *`,
    [
      run.id, run.threadId, run.agentId, run.input, run.idempotencyKey, run.requestHash,
      run.startedBy ? JSON.stringify(run.startedBy) : null,
    ],
  );
  return rows[0] && toRun(rows[0]);
}

/** The run; given a tenant, only if it is that tenant's (another tenant's run is as unknown as no run). */
export async function findRun(db: Queryable, id: string, tenantId?: string): Promise<RunRecord | undefined> {
  const { rows } = tenantId === undefined
    ? await db.query<RunRow>('SELECT * FROM runs WHERE id = $1', [id])
    : await db.query<RunRow>('SELECT * FROM runs WHERE id = $1 AND tenant_id = $2', [id, tenantId]);
  return rows[0] && toRun(rows[0]);
}

/**
 * Undoes a run whose workflow could not be started: its row goes unless the run wrote an event
 * (then its workflow did start), and so does a thread made for it that holds no other run.
 */
export async function deleteUnstartedRun(db: Queryable, run: { id: string; threadId: string }, { newThread = false } = {}): Promise<void> {
  await db.query('DELETE FROM runs WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM run_events WHERE run_id = $1)', [run.id]);
  if (!newThread) return;
  await db.query('DELETE FROM threads WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM runs WHERE thread_id = $1)', [run.threadId]);
}
