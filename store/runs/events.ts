import type { Queryable } from '../pool';
import { storableJsonText } from '../storable-text';
import { writeTogether, type Write } from './writes';

/** A run's event log (run_events): numbered, written with the step they describe, read by streams and views. */

export type RunEventType = 'run_started' | 'turn_started' | 'turn_ended' | 'tool_call_started' | 'tool_call_ended'
  | 'approval_requested' | 'approval_resolved' | 'budget_requested' | 'budget_resolved' | 'child_run_started' | 'child_run_ended'
  | 'caller_tool_call' | 'run_ended';

export interface RunEvent { seq: number; type: RunEventType; data: Record<string, unknown>; createdAt: string }

export const eventWrite = (runId: string, seq: number, type: RunEventType, data: Record<string, unknown> = {}): Write => ({
  text: 'INSERT INTO run_events (run_id, seq, type, data) VALUES ($1, $2, $3, $4) ON CONFLICT (run_id, seq) DO NOTHING',
  values: [runId, seq, type, storableJsonText(data)],
});

export async function appendEvent(
  db: Queryable, runId: string, seq: number, type: RunEventType, data: Record<string, unknown> = {},
): Promise<void> {
  await writeTogether(db, [eventWrite(runId, seq, type, data)]);
}

/** Adds fields to an event already written (figures known only after it); idempotent like every write here. */
export async function mergeEventData(db: Queryable, runId: string, seq: number, data: Record<string, unknown>): Promise<void> {
  await db.query('UPDATE run_events SET data = data || $3::jsonb WHERE run_id = $1 AND seq = $2', [runId, seq, storableJsonText(data)]);
}

export async function listEvents(db: Queryable, runId: string, afterSeq = 0): Promise<RunEvent[]> {
  const { rows } = await db.query<{ seq: number; type: RunEventType; data: Record<string, unknown>; created_at: Date }>(
    'SELECT seq, type, data, created_at FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq', [runId, afterSeq],
  );
  return rows.map((r) => ({ seq: r.seq, type: r.type, data: r.data, createdAt: r.created_at.toISOString() }));
}

/** The number the run's next event gets, for a writer that is not the run's workflow (which numbers its own). */
export async function nextEventSeq(db: Queryable, runId: string): Promise<number> {
  const { rows } = await db.query<{ next: number }>('SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM run_events WHERE run_id = $1', [runId]);
  return rows[0].next;
}
