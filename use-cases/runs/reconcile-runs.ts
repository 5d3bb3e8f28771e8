import type { Client } from '@temporalio/client';
import type { Db } from '../../store/pool';
import { nextEventSeq } from '../../store/runs/events';
import { unendedRunsOlderThan } from '../../store/runs/listing';
import { findStoredRun } from '../../store/runs/stored-runs';
import { writeRunEnd } from '../../store/runs/lifecycle';
import type { RunResult } from '../../store/runs/results';
import type { Logger } from '../../platform/logger';
import { RUN_WORKFLOW_TYPE } from '../../core/run';
import { literal } from './list-runs';

/**
 * A run's workflow writes its result before it closes, so a run without a result is running,
 * except when its workflow was closed from outside (an operator's terminate, a timeout) or never
 * existed. Reading a run never asks Temporal (use-cases/runs/runs.ts), so this periodic pass gives
 * those runs the result they would otherwise never get: one bounded database query and one
 * visibility listing per pass, however many requests are waiting.
 */

export interface ReconcileOptions {
  /** how often a pass runs; default 30 s */
  everyMs?: number;
  /** runs younger than this are left alone (visibility lags a start a little); default 30 s */
  minAgeMs?: number;
  /** a run unknown to Temporal this long after its creation is given up as failed; default 10 min */
  notFoundAfterMs?: number;
  /** runs looked at per pass; default 100 */
  batch?: number;
}

export interface RunReconciler {
  /** one pass now; resolves to the number of runs given a result */
  pass(): Promise<number>;
  close(): Promise<void>;
}

interface Closure { status: RunResult['status']; stopReason: string; error: RunResult['error'] }

const CLOSED_OUTSIDE: Closure = {
  status: 'failed', stopReason: 'error',
  error: { type: 'WorkflowClosed', message: 'The run\'s workflow closed without recording an outcome (terminated or timed out)' },
};
const CANCELLED_OUTSIDE: Closure = { status: 'cancelled', stopReason: 'cancelled', error: null };
const NOT_FOUND: Closure = {
  status: 'failed', stopReason: 'error',
  error: { type: 'WorkflowNotFound', message: 'The run\'s workflow does not exist in Temporal (never started, or past retention)' },
};

export function startRunReconciler(deps: { db: Db; client: Client; logger: Logger }, options: ReconcileOptions = {}): RunReconciler {
  const everyMs = options.everyMs ?? 30_000;
  const minAgeMs = options.minAgeMs ?? 30_000;
  const notFoundAfterMs = options.notFoundAfterMs ?? 600_000;
  const batch = options.batch ?? 100;
  let current: Promise<number> | undefined;

  const pass = async (): Promise<number> => {
    const rows = await unendedRunsOlderThan(deps.db, minAgeMs, batch);
    if (rows.length === 0) return 0;
    const seen = await workflowStates(deps.client, rows.map((r) => r.id));
    let written = 0;
    for (const { id, ageMs } of rows) {
      const state = seen.get(id);
      const closure = state === 'closed' ? CLOSED_OUTSIDE
        : state === 'cancelled' ? CANCELLED_OUTSIDE
          : !state && ageMs >= notFoundAfterMs ? NOT_FOUND : undefined;
      if (closure && (await writeClosure(deps.db, id, closure))) {
        written += 1;
        deps.logger.warn({ runId: id, error: closure.error?.type ?? closure.status }, 'run closed without a result; recorded one');
      }
    }
    return written;
  };
  const guarded = () => {
    // One pass at a time; a pass that fails is logged and the next one tries again.
    current ??= pass().catch((err: unknown) => {
      deps.logger.warn({ err: (err as Error).message }, 'run reconciliation failed');
      return 0;
    }).finally(() => {
      current = undefined;
    });
    return current;
  };
  const timer = setInterval(() => void guarded(), everyMs);
  timer.unref();
  return {
    pass: guarded,
    async close() {
      clearInterval(timer);
      await current;
    },
  };
}

type WorkflowState = 'running' | 'closed' | 'cancelled' | 'handed_over';
const STATES: Partial<Record<string, WorkflowState>> = {
  COMPLETED: 'closed', FAILED: 'closed', TERMINATED: 'closed', TIMED_OUT: 'closed', CANCELLED: 'cancelled', CONTINUED_AS_NEW: 'handed_over',
};

/** Each run's state from one visibility listing (a run that continued-as-new has several executions). */
async function workflowStates(client: Client, ids: string[]): Promise<Map<string, WorkflowState>> {
  const query = `WorkflowType = ${literal(RUN_WORKFLOW_TYPE)} AND WorkflowId IN (${ids.map(literal).join(', ')})`;
  const states = new Map<string, WorkflowState>();
  const rank: Record<WorkflowState, number> = { handed_over: 0, closed: 1, cancelled: 1, running: 2 };
  for await (const wf of client.workflow.list({ query, pageSize: 1000 })) {
    const state = STATES[wf.status.name] ?? 'running';
    const before = states.get(wf.workflowId);
    if (!before || rank[state] > rank[before]) states.set(wf.workflowId, state);
  }
  return states;
}

/**
 * The result, a run_ended event after the last one written, the thread's release and its approvals'
 * end (nobody can decide for a closed workflow any more): the statement that ends every run.
 */
async function writeClosure(db: Db, runId: string, closure: Closure): Promise<boolean> {
  const run = await findStoredRun(db, runId);
  if (!run?.progress) return false;
  const next = await nextEventSeq(db, runId);
  return writeRunEnd(db, {
    runId, threadId: run.threadId, agentId: run.agentId, status: closure.status, stopReason: closure.stopReason,
    output: null, error: closure.error, turns: run.progress.turns, usage: run.progress.usage,
    toolCalls: run.progress.toolCalls, createdAt: run.createdAt,
  }, [], { seq: next, data: { status: closure.status, stopReason: closure.stopReason, error: closure.error } });
}
