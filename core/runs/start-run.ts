import { createHash } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { findAgent } from '../db/agents';
import type { Db } from '../db/pool';
import { findRun, findRunResult, insertRun, type RunRecord } from '../db/run-store';
import { findThread } from '../db/threads';
import { idempotentRunId, newId } from '../ids';
import { RUN_WORKFLOW_TYPE, type RunWorkflowInput } from '../../workflows/definitions';
import { agentIdKey, runStatusKey, threadIdKey } from '../../workflows/search-attributes';
import { EngineError } from './errors';

export interface StartRunRequest {
  threadId: string;
  input: string;
  agentId?: string;
  idempotencyKey?: string;
  /** forces continue-as-new early; tests use it */
  continueAsNewAtHistoryBytes?: number;
}

export interface StartRunDeps {
  db: Db;
  client: Client;
  taskQueue: string;
}

export interface StartedRun {
  run: RunRecord;
  /** false when an Idempotency-Key replay returned an existing run */
  created: boolean;
}

const requestHash = (r: StartRunRequest) =>
  createHash('sha256').update(JSON.stringify([r.threadId, r.input, r.agentId ?? null])).digest('hex');

/**
 * Starts a run on a thread: validate → claim the thread → record the run → start the workflow.
 * The workflow id is the run id, so a run that continues-as-new keeps its identity.
 */
export async function startRun(deps: StartRunDeps, req: StartRunRequest): Promise<StartedRun> {
  const { db } = deps;
  const thread = await findThread(db, req.threadId);
  if (!thread) throw new EngineError('not_found', `Thread ${req.threadId} does not exist`);
  const agentId = req.agentId ?? thread.agentId;
  if (!(await findAgent(db, agentId))) throw new EngineError('not_found', `Agent ${agentId} does not exist`);

  const hash = requestHash({ ...req, agentId });
  const runId = req.idempotencyKey ? idempotentRunId(thread.id, req.idempotencyKey) : newId('run');
  if (req.idempotencyKey) {
    const existing = await findRun(db, runId);
    if (existing) return replay(deps, existing, hash, req);
  }

  await claimThread(deps, thread.id, runId);
  const run = await insertRun(db, {
    id: runId, threadId: thread.id, agentId, input: req.input, idempotencyKey: req.idempotencyKey ?? null, requestHash: hash,
  }).catch(async (err: unknown) => {
    await releaseThread(deps, thread.id, runId);
    throw err;
  });
  if (!run) {
    // A concurrent request with the same Idempotency-Key inserted the run first; it owns the thread claim.
    const winner = await findRun(db, runId);
    if (!winner) throw new EngineError('conflict', 'A concurrent request with this Idempotency-Key failed; retry it');
    return replay(deps, winner, hash, req);
  }
  try {
    await startWorkflow(deps, run, req);
  } catch (err) {
    await releaseThread(deps, thread.id, runId);
    await db.query('DELETE FROM runs WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM run_events WHERE run_id = $1)', [runId]);
    throw err;
  }
  return { run, created: true };
}

/** Stripe's semantics: the same key and body give the same run; the same key with another body is a conflict. */
async function replay(deps: StartRunDeps, existing: RunRecord, hash: string, req: StartRunRequest): Promise<StartedRun> {
  if (existing.requestHash !== hash) {
    throw new EngineError('conflict', 'This Idempotency-Key was already used with a different request body');
  }
  await startWorkflow(deps, existing, req); // finishes a start that was interrupted; a no-op otherwise
  return { run: existing, created: false };
}

const releaseThread = (deps: StartRunDeps, threadId: string, runId: string) =>
  deps.db.query('UPDATE threads SET active_run_id = NULL WHERE id = $1 AND active_run_id = $2', [threadId, runId]);

async function startWorkflow(deps: StartRunDeps, run: RunRecord, req: StartRunRequest): Promise<void> {
  const input: RunWorkflowInput = { runId: run.id, continueAsNewAtHistoryBytes: req.continueAsNewAtHistoryBytes };
  try {
    await deps.client.workflow.start(RUN_WORKFLOW_TYPE, {
      workflowId: run.id,
      taskQueue: deps.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: threadIdKey, value: run.threadId },
        { key: agentIdKey, value: run.agentId },
        { key: runStatusKey, value: 'running' },
      ],
      staticSummary: `run ${run.id} on thread ${run.threadId}`,
    });
  } catch (err) {
    // The run already ran and closed: an idempotent replay, not an error.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** A thread runs one run at a time. A holder that has already ended (its result is written) is stale. */
async function claimThread(deps: StartRunDeps, threadId: string, runId: string): Promise<void> {
  const claim = () => deps.db.query(
    'UPDATE threads SET active_run_id = $2 WHERE id = $1 AND (active_run_id IS NULL OR active_run_id = $2) RETURNING id',
    [threadId, runId],
  );
  if ((await claim()).rowCount === 1) return;
  const { rows } = await deps.db.query<{ active_run_id: string | null }>('SELECT active_run_id FROM threads WHERE id = $1', [threadId]);
  const holder = rows[0]?.active_run_id;
  if (holder && !(await holderIsGone(deps, holder))) {
    throw new EngineError('thread_busy', `Thread ${threadId} is busy with run ${holder}`);
  }
  if (holder) await releaseThread(deps, threadId, holder);
  if ((await claim()).rowCount !== 1) throw new EngineError('thread_busy', `Thread ${threadId} is busy`);
}

async function holderIsGone(deps: StartRunDeps, runId: string): Promise<boolean> {
  if (await findRunResult(deps.db, runId)) return true;
  try {
    const description = await deps.client.workflow.getHandle(runId).describe();
    return description.status.name !== 'RUNNING';
  } catch (err) {
    return err instanceof WorkflowNotFoundError;
  }
}
