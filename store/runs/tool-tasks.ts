import { randomUUID } from 'node:crypto';
import type { Queryable } from '../pool';
import { storableText } from '../storable-text';

/**
 * Tool calls their servers run as tasks (migration 14): the serialized reference (mcp-client/tool-calls/tasks.ts)
 * that the workflow's short poll activities use, from any worker, while no activity runs. Keyed by
 * the call's place in the transcript, so a retried start finds what an earlier attempt stored.
 */

export type ToolTaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled' | 'timed_out';

export interface StoredToolTask {
  taskRefId: string;
  runId: string;
  toolCallId: string;
  turn: number;
  slot: number;
  integrationId: string;
  reference: string;
  status: ToolTaskStatus;
  polls: number;
  /** a digest of the last questions relayed to a person */
  lastAsked: string | null;
  createdAt: string;
}

interface Row {
  task_ref_id: string; run_id: string; tool_call_id: string; turn: number; slot: number; integration_id: string;
  reference: string; status: ToolTaskStatus; polls: number; last_asked: string | null; created_at: Date;
}

const toTask = (r: Row): StoredToolTask => ({
  taskRefId: r.task_ref_id, runId: r.run_id, toolCallId: r.tool_call_id, turn: r.turn, slot: r.slot, integrationId: r.integration_id,
  reference: r.reference, status: r.status, polls: r.polls, lastAsked: r.last_asked, createdAt: r.created_at.toISOString(),
});

export type NewToolTask = Pick<StoredToolTask, 'runId' | 'toolCallId' | 'turn' | 'slot' | 'integrationId' | 'reference'>;

/** Stores the reference; a call that stored one already keeps its first (the task it polls). */
export async function insertToolTask(db: Queryable, t: NewToolTask): Promise<StoredToolTask> {
  await db.query(
    `INSERT INTO run_tool_tasks (task_ref_id, run_id, tool_call_id, turn, slot, integration_id, reference)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, turn, slot) DO NOTHING`,
    [`tsk_${randomUUID().replace(/-/g, '')}`, t.runId, storableText(t.toolCallId), t.turn, t.slot, t.integrationId, t.reference],
  );
  const { rows } = await db.query<Row>(
    'SELECT * FROM run_tool_tasks WHERE run_id = $1 AND turn = $2 AND slot = $3',
    [t.runId, t.turn, t.slot],
  );
  return toTask(rows[0]);
}

export async function findToolTask(db: Queryable, runId: string, taskRefId: string): Promise<StoredToolTask | undefined> {
  const { rows } = await db.query<Row>('SELECT * FROM run_tool_tasks WHERE task_ref_id = $1 AND run_id = $2', [taskRefId, runId]);
  return rows[0] && toTask(rows[0]);
}

/** What the last poll found. */
export async function recordToolTaskPoll(db: Queryable, taskRefId: string, status: ToolTaskStatus): Promise<void> {
  await db.query(
    'UPDATE run_tool_tasks SET status = $2, polls = polls + 1, updated_at = now() WHERE task_ref_id = $1',
    [taskRefId, status],
  );
}

/** The task's questions were stored as a round for a person: the same questions seen again are not asked twice. */
export async function recordToolTaskAsked(db: Queryable, taskRefId: string, digest: string): Promise<void> {
  await db.query('UPDATE run_tool_tasks SET last_asked = $2, updated_at = now() WHERE task_ref_id = $1', [taskRefId, digest]);
}

/** The task a call's activity stored before its worker was lost, with its integration's taskTimeout (ms). */
export async function findCallToolTask(
  db: Queryable, runId: string, turn: number, slot: number,
): Promise<{ taskRefId: string; taskTimeoutMs: number } | undefined> {
  const { rows } = await db.query<{ task_ref_id: string; task_timeout_ms: number }>(
    `SELECT t.task_ref_id, i.task_timeout_ms FROM run_tool_tasks t JOIN integrations i ON i.id = t.integration_id
     WHERE t.run_id = $1 AND t.turn = $2 AND t.slot = $3`, [runId, turn, slot]);
  return rows[0] && { taskRefId: rows[0].task_ref_id, taskTimeoutMs: rows[0].task_timeout_ms };
}
