import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { toolCallChanges } from '../../core/eval-scoring';
import type { EvalRunView, EvalSummary, EvalView } from '../../core/eval-view';
import { EngineError } from '../../core/engine-error';
import type { Usage } from '../../core/messages';
import { endEval, findEval, listEvals, type EvalRecord } from '../../store/evals/evals';
import { evalRunFacts, type EvalRunFacts } from '../../store/evals/eval-runs';
import type { Db } from '../../store/pool';
import { requireRole, type Caller } from '../caller';

/*
 * Evals as callers see them (GET /v1/evals, GET /v1/evals/:id, POST /v1/evals/:id/cancel), of
 * the caller's tenant only: another tenant's eval is not_found, as an unknown id is. What its
 * replays did is read from their runs in PostgreSQL; nothing asks Temporal but a cancel.
 */

export const evalNotFound = (evalId: string) => new EngineError('not_found', `Eval ${evalId} does not exist`);

/** Where an eval shows each output cut. */
export const EVAL_OUTPUT_CHARS = 4000;

async function loadEval(db: Db, caller: Caller, evalId: string): Promise<EvalRecord> {
  const found = await findEval(db, evalId, caller.tenantId);
  if (!found) throw evalNotFound(evalId);
  return found;
}

const summaryOf = (e: EvalRecord): EvalSummary => ({
  id: e.id, name: e.name, status: e.status, tools: e.tools as EvalSummary['tools'], agentId: e.agentId, error: e.error,
  startedBy: e.startedBy, createdAt: e.createdAt, endedAt: e.endedAt,
});

/** The caller's eval with each run's original and replay side by side, and the totals. */
export async function readEval(db: Db, caller: Caller, evalId: string): Promise<EvalView> {
  requireRole(caller, 'read');
  const record = await loadEval(db, caller, evalId);
  const runs = (await evalRunFacts(db, evalId, EVAL_OUTPUT_CHARS)).map(runView);
  return { ...summaryOf(record), totals: totalsOf(runs), runs };
}

/** A page of the caller's evals, newest first. */
export async function listEvalsOf(db: Db, caller: Caller, page: { cursor?: string; limit: number }): Promise<{
  evals: EvalSummary[]; nextCursor: string | null;
}> {
  requireRole(caller, 'read');
  const { evals, nextCursor } = await listEvals(db, { tenantId: caller.tenantId, ...page });
  return { evals: evals.map(summaryOf), nextCursor };
}

/**
 * Asks the eval's workflow to stop: it cancels the replays running, and the eval ends
 * `cancelled` (at once when its workflow is gone). An eval that has ended is left as it is.
 * Answers with the eval's status now.
 */
export async function cancelEval(
  deps: { db: Db; client: Client }, caller: Caller, evalId: string,
): Promise<{ id: string; status: EvalSummary['status'] }> {
  requireRole(caller, 'run');
  const record = await loadEval(deps.db, caller, evalId);
  if (record.status !== 'running') return { id: record.id, status: record.status };
  const handle = deps.client.workflow.getHandle(evalId);
  await handle.cancel().catch((err: unknown) => {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  });
  // The workflow ends its eval before it closes: one closed with its eval running was terminated
  // from outside, and nothing will end the eval but this.
  const closed = await handle.describe().then((d) => d.status.name !== 'RUNNING', (err: unknown) => {
    if (err instanceof WorkflowNotFoundError) return true;
    throw err;
  });
  if (closed) await endEval(deps.db, evalId, { status: 'cancelled' });
  return { id: record.id, status: (await findEval(deps.db, evalId))?.status ?? record.status };
}

const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0 };

function runView(f: EvalRunFacts): EvalRunView {
  const changes = f.score?.toolChanges
    ?? (f.original && f.replay ? toolCallChanges(f.original.toolCalls, f.replay.toolCalls) : { added: [], removed: [], changed: [] });
  return {
    runId: f.originalRunId, replayRunId: f.replayRecorded ? f.replayRunId : null,
    status: f.replay?.status ?? (f.replayRecorded ? 'running' : 'pending'),
    passed: f.score?.passed ?? null, failed: f.score?.failed ?? [],
    output: { original: f.original?.output ?? null, replay: f.replay?.output ?? null },
    toolCalls: changes,
    turns: { original: f.original?.turns ?? 0, replay: f.replay?.turns ?? 0 },
    usage: { original: f.original?.usage ?? NO_USAGE, replay: f.replay?.usage ?? NO_USAGE },
  };
}

const add = (a: Usage, b: Usage): Usage => ({ inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens });

function totalsOf(runs: EvalRunView[]): EvalView['totals'] {
  return {
    runs: runs.length,
    scored: runs.filter((r) => r.passed !== null).length,
    passed: runs.filter((r) => r.passed === true).length,
    failed: runs.filter((r) => r.passed === false).length,
    turns: { original: runs.reduce((n, r) => n + r.turns.original, 0), replay: runs.reduce((n, r) => n + r.turns.replay, 0) },
    usage: {
      original: runs.reduce((u, r) => add(u, r.usage.original), NO_USAGE), replay: runs.reduce((u, r) => add(u, r.usage.replay), NO_USAGE),
    },
  };
}
