import type { Client } from '@temporalio/client';
import type { Db } from '../db/pool';
import { findRun, findRunResult, listToolCalls } from '../db/run-store';
import type { Usage } from '../messages';
import { runStateQuery, type RunState, type RunStatus } from '../../workflows/definitions';

export interface RunView {
  id: string;
  threadId: string;
  agentId: string;
  status: RunStatus;
  stopReason: string | null;
  output: string | null;
  error: { type: string; message: string } | null;
  turns: number;
  usage: Usage;
  toolCalls: {
    id: string; turn: number; name: string; type: string; integrationId?: string;
    status: 'ok' | 'error'; durationMs: number; result: string; resultBytes: number;
  }[];
  createdAt: string;
  endedAt: string | null;
}

const QUERY_DEADLINE_MS = 2_000;

/**
 * The run object. Once a run has ended, run_results is the truth; while it runs, Temporal is
 * (a query with a short deadline, so a missing worker cannot hang the caller).
 */
export async function readRun(deps: { db: Db; client: Client }, runId: string): Promise<RunView | undefined> {
  const run = await findRun(deps.db, runId);
  if (!run) return undefined;
  const result = await findRunResult(deps.db, runId);
  if (result) {
    return {
      id: run.id, threadId: result.threadId, agentId: result.agentId, status: result.status, stopReason: result.stopReason,
      output: result.output, error: result.error, turns: result.turns, usage: result.usage,
      toolCalls: result.toolCalls.map(toView), createdAt: result.createdAt, endedAt: result.endedAt,
    };
  }
  let state: RunState | undefined;
  try {
    state = await deps.client.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => deps.client.workflow.getHandle(runId).query(runStateQuery));
  } catch {
    state = undefined; // no worker answered in time: report what the database knows
  }
  const toolCalls = await listToolCalls(deps.db, runId);
  return {
    id: run.id, threadId: run.threadId, agentId: run.agentId, status: 'running', stopReason: null, output: null, error: null,
    turns: state?.turns ?? 0, usage: state?.usage ?? { inputTokens: 0, outputTokens: 0 },
    toolCalls: toolCalls.map(toView), createdAt: run.createdAt, endedAt: null,
  };
}

function toView(c: { id: string; turn: number; name: string; type: string; integrationId: string | null; status: 'ok' | 'error'; durationMs: number; result: string; resultBytes: number }): RunView['toolCalls'][number] {
  return {
    id: c.id, turn: c.turn, name: c.name, type: c.type, ...(c.integrationId ? { integrationId: c.integrationId } : {}),
    status: c.status, durationMs: c.durationMs, result: c.result, resultBytes: c.resultBytes,
  };
}
