import type { Usage } from '../../core/messages';
import type { Queryable } from '../pool';
import type { ToolCallRecord } from './tool-calls';

/** A run's result (run_results): written once, when the run ends; the truth about a run that has ended. */

export interface RunResult {
  runId: string;
  threadId: string;
  agentId: string;
  status: 'completed' | 'failed' | 'cancelled';
  stopReason: string | null;
  /** with stopReason "budget": the limit that stopped the run */
  limitReached?: string | null;
  output: string | null;
  error: { type: string; message: string } | null;
  turns: number;
  usage: Usage;
  /** usage with that of the runs it started as sub-agents; absent for runs recorded before them */
  usageWithChildren?: Usage | null;
  toolCalls: (Omit<ToolCallRecord, 'slot'>)[];
  createdAt: string;
  endedAt: string;
}

interface RunResultRow {
  run_id: string; thread_id: string; agent_id: string; status: RunResult['status']; stop_reason: string | null;
  limit_reached: string | null; output: string | null; error: RunResult['error']; turns: number; usage: Usage;
  usage_with_children: Usage | null; tool_calls: RunResult['toolCalls'];
  created_at: Date; ended_at: Date;
}

export async function findRunResult(db: Queryable, runId: string): Promise<RunResult | undefined> {
  const { rows } = await db.query<RunResultRow>('SELECT * FROM run_results WHERE run_id = $1', [runId]);
  const r = rows[0];
  return r && {
    runId: r.run_id, threadId: r.thread_id, agentId: r.agent_id, status: r.status, stopReason: r.stop_reason, limitReached: r.limit_reached,
    output: r.output, error: r.error, turns: r.turns, usage: r.usage, usageWithChildren: r.usage_with_children, toolCalls: r.tool_calls,
    createdAt: r.created_at.toISOString(), endedAt: r.ended_at.toISOString(),
  };
}
