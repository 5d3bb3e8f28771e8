import { createHash } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { MAX_RUN_INPUT_CHARS, type RunStatus } from '../../core/run';
import { agentDisabledText, findAgentByRef, findThreadAgentByRef } from '../../store/agents';
import type { Agent } from '../../core/agent';
import type { Db, Queryable } from '../../store/pool';
import { insertRunOnNewThread, insertRunOnThread } from '../../store/runs/lifecycle';
import { findRunResult } from '../../store/runs/results';
import { deleteUnstartedRun, findRun, insertRun, type NewRun, type RunRecord, type StartedBy } from '../../store/runs/runs';
import { claimThread, releaseThread } from '../../store/threads/thread-claim';
import { ensureThread, findTenantThread } from '../../store/threads/threads';
import { EngineError } from '../../core/engine-error';
import { idempotentRunId, idempotentThreadId, newId } from '../../platform/ids';
import { newRunView, readRun } from './runs';
import type { RunLimits } from '../../core/run-limits';
import type { Caller } from '../caller';
import { admitRun } from '../tenants/run-cap';
import { priceOf, pricedModelName, type PriceTable } from '../../core/pricing';
import { checkCallerTools, type CallerToolsRequest } from './caller-tool-declarations';
import { startWorkflow, type StartedAgent, type StartRunDeps, type StartRunRequest } from './run-workflow-start';

/*
 * Starting a run, behind the API and the MCP endpoint: idempotency (Stripe's semantics), the
 * one-run-per-thread rule, and the run's workflow. Reading and cancelling runs is runs.ts's. A run
 * starts on a thread of the caller's tenant (another tenant's thread is not found), gets its
 * thread's tenant, in its row and in its search attribute TenantId, and records who started it.
 */

export { MAX_RUN_INPUT_CHARS };

export type { StartRunDeps, StartRunRequest };

export interface StartedRun {
  run: RunRecord;
  /** false when an Idempotency-Key replay returned an existing run */
  created: boolean;
}

/** Who a run's record says started it. */
const startedByOf = (caller: Caller): StartedBy => ({ principalId: caller.principal.id, name: caller.principal.name });

/** The request's identity for its Idempotency-Key: what it was before caller tools, and those when it declares them. */
const requestHash = (r: StartRunRequest) => createHash('sha256').update(JSON.stringify([
  r.threadId, r.input, r.agentId ?? null, ...(r.limits ? [r.limits] : []),
  ...(r.callerTools || r.callerToolTimeout ? [r.callerTools ?? null, r.callerToolTimeout ?? null] : []),
])).digest('hex');

/**
 * Starts a run on a thread: validate → claim the thread → record the run → start the workflow.
 * The workflow id is the run id, so a run that continues-as-new keeps its identity. Without an
 * Idempotency-Key, the first three are one statement.
 */
export async function startRun(deps: StartRunDeps, caller: Caller, req: StartRunRequest): Promise<StartedRun> {
  if (req.idempotencyKey) return startIdempotentRun(deps, caller, req, req.idempotencyKey);
  const runId = newId('run');
  const startedBy = startedByOf(caller);
  const found = await admitRun(deps.db, caller.tenantId, (q) => insertRunOnThread(q, {
    runId, threadId: req.threadId, agentRef: req.agentId, input: req.input, tenantId: caller.tenantId, startedBy,
  }));
  if (!found.thread) throw new EngineError('not_found', `Thread ${req.threadId} does not exist`);
  const { agent } = found;
  if (!agent) throw new EngineError('not_found', `Agent ${req.agentId ?? found.thread.agentId} does not exist`);
  if (agent.disabledAt) throw new EngineError('conflict', agentDisabledText(agent));
  // The thread is held by a run without a result: it may still run, or have closed from outside.
  const run = found.run ?? await claimAndInsert(deps, caller.tenantId, {
    id: runId, threadId: found.thread.id, agentId: agent.id, input: req.input, idempotencyKey: null, requestHash: null, startedBy,
  });
  if (!run) throw new EngineError('conflict', `Run ${runId} could not be recorded; retry`);
  await startWorkflowOrUndo(deps, run, req, agent);
  return { run, created: true };
}

/** What a start answers (202): the run, and where it is now; a replay's run may have ended since. */
export async function runAccepted(db: Db, { run, created }: StartedRun): Promise<{ id: string; threadId: string; status: RunStatus }> {
  const status = created ? 'running' : ((await readRun(db, run.id))?.status ?? 'running');
  return { id: run.id, threadId: run.threadId, status };
}

export interface StartOnNewThreadRequest extends CallerToolsRequest {
  /** the agent, by id or name */
  agentRef: string;
  input: string;
  idempotencyKey?: string;
  limits?: RunLimits;
}

/**
 * Starts a run on a thread made for it (POST /v1/runs): a one-shot run, one request. Without an
 * Idempotency-Key, the thread, its claim and the run are one statement. With one, the thread's id
 * derives from the key, so a retry finds the same thread and so the same run.
 */
export async function startRunOnNewThread(deps: StartRunDeps, caller: Caller, req: StartOnNewThreadRequest): Promise<StartedRun> {
  if (req.idempotencyKey) {
    const agent = await findAgentByRef(deps.db, req.agentRef, caller.tenantId);
    if (!agent) throw new EngineError('not_found', `Agent ${req.agentRef} does not exist`);
    const threadId = idempotentThreadId(req.idempotencyKey, caller.tenantId);
    // A disabled agent gets no new thread; a retry of a request it accepted before is still answered.
    const made = await ensureThread(deps.db, threadId, agent.id, caller.tenantId);
    if (!made) throw new EngineError('agent_disabled', agentDisabledText(agent));
    const started = { ...callerToolsRequest(req), threadId, input: req.input, agentId: agent.id, limits: req.limits };
    return startIdempotentRunOf(deps, caller, agent, started, req.idempotencyKey);
  }
  const { agent, run } = await admitRun(deps.db, caller.tenantId, (q) => insertRunOnNewThread(q, {
    runId: newId('run'), threadId: newId('thr'), agentRef: req.agentRef, input: req.input, tenantId: caller.tenantId,
    startedBy: startedByOf(caller),
  }));
  if (!agent) throw new EngineError('not_found', `Agent ${req.agentRef} does not exist`);
  if (!run) throw new EngineError('agent_disabled', agentDisabledText(agent));
  const started = { ...callerToolsRequest(req), threadId: run.threadId, input: req.input, limits: req.limits };
  await startWorkflowOrUndo(deps, run, started, agent, { newThread: true });
  return { run, created: true };
}

async function startIdempotentRun(deps: StartRunDeps, caller: Caller, req: StartRunRequest, key: string): Promise<StartedRun> {
  const thread = await findTenantThread(deps.db, caller.tenantId, req.threadId);
  if (!thread) throw new EngineError('not_found', `Thread ${req.threadId} does not exist`);
  const agent = await findThreadAgentByRef(deps.db, thread.id, req.agentId ?? thread.agentId);
  if (!agent) throw new EngineError('not_found', `Agent ${req.agentId ?? thread.agentId} does not exist`);
  return startIdempotentRunOf(deps, caller, agent, { ...req, threadId: thread.id }, key);
}

/** An idempotent start on a thread that exists, of the agent found for it. */
async function startIdempotentRunOf(
  deps: StartRunDeps, caller: Caller, agent: Agent, req: StartRunRequest, key: string,
): Promise<StartedRun> {
  const { db } = deps;
  const agentId = agent.id;
  const hash = requestHash({ ...req, agentId });
  const runId = idempotentRunId(req.threadId, key);
  const existing = await findRun(db, runId);
  if (existing) return replay(deps, existing, hash, req);
  if (agent.disabledAt) throw new EngineError('conflict', agentDisabledText(agent));

  const run = await claimAndInsert(deps, caller.tenantId, {
    id: runId, threadId: req.threadId, agentId, input: req.input, idempotencyKey: key, requestHash: hash, startedBy: startedByOf(caller),
  });
  if (!run) {
    // A concurrent request with the same Idempotency-Key inserted the run first; it owns the thread claim.
    const winner = await findRun(db, runId);
    if (!winner) throw new EngineError('conflict', 'A concurrent request with this Idempotency-Key failed; retry it');
    return replay(deps, winner, hash, req);
  }
  await startWorkflowOrUndo(deps, run, req, agent);
  return { run, created: true };
}

/**
 * Claims the thread, then records the run, within the tenant's cap; undefined when a run with this
 * id exists already.
 */
async function claimAndInsert(deps: StartRunDeps, tenantId: string, record: NewRun): Promise<RunRecord | undefined> {
  return admitRun(deps.db, tenantId, async (q) => {
    await claimThreadFor(deps, q, record.threadId, record.id);
    return insertRun(q, record).catch(async (err: unknown) => {
      // In a capped tenant's transaction the rollback lets go of the claim: this release may fail then.
      await releaseThread(q, record.threadId, record.id).catch(() => undefined);
      throw err;
    });
  });
}

/** A workflow that could not be started leaves neither the claim nor the run behind, nor a thread made for it. */
export async function startWorkflowOrUndo(
  deps: StartRunDeps, run: RunRecord, req: StartRunRequest, agent: StartedAgent, { newThread = false } = {},
): Promise<void> {
  // Before the start: once the workflow runs, only a read can tell what it has done.
  deps.views?.seed(run.id, run.tenantId, newRunView(run));
  try {
    requirePricedModel(deps.prices, agent, req.limits);
    // A run's own caller tools are checked against its agent's tools; an agent's were, when it was saved.
    if (req.callerTools) await checkCallerTools(deps.db, req.callerTools, agent.integrationIds, 'body.callerTools');
    await startWorkflow(deps, run, req, agent);
  } catch (err) {
    deps.views?.forget(run.id);
    await releaseThread(deps.db, run.threadId, run.id);
    await deleteUnstartedRun(deps.db, run, { newThread });
    throw err;
  }
  deps.metrics?.runStarted(agent.name);
}

/** A request's caller tools, only when it declares them (its Idempotency-Key's hash says so). */
const callerToolsRequest = (r: CallerToolsRequest): CallerToolsRequest => ({
  ...(r.callerTools ? { callerTools: r.callerTools } : {}), ...(r.callerToolTimeout ? { callerToolTimeout: r.callerToolTimeout } : {}),
});

/** Stripe's semantics: the same key and body give the same run; the same key with another body is a conflict. */
async function replay(deps: StartRunDeps, existing: RunRecord, hash: string, req: StartRunRequest): Promise<StartedRun> {
  if (existing.requestHash !== hash) {
    throw new EngineError('conflict', 'This Idempotency-Key was already used with a different request body');
  }
  await startWorkflow(deps, existing, req); // finishes a start that was interrupted; a no-op otherwise
  return { run: existing, created: false };
}

/** A budget in USD needs the run's model priced: an unpriced turn costs nothing the limit could count. */
function requirePricedModel(prices: PriceTable | undefined, agent: StartedAgent, limits: RunLimits | undefined): void {
  if (agent.limits?.maxCostUsd === undefined && limits?.maxCostUsd === undefined) return;
  const model = pricedModelName(agent.model);
  if (priceOf(prices, agent.model.provider, model)) return;
  throw new EngineError('validation', `limits.maxCostUsd: the agent's model ${agent.model.provider}/${model} has no price in the `
    + 'operator\'s price table (PRICES_FILE); a budget in USD needs one', { field: 'limits.maxCostUsd' });
}

/**
 * A thread runs one run at a time (store/threads/thread-claim.ts). A holder without a result may
 * still run, or its workflow may have closed from outside: only Temporal can tell.
 */
async function claimThreadFor(deps: StartRunDeps, q: Queryable, threadId: string, runId: string): Promise<void> {
  const first = await claimThread(q, threadId, runId);
  if (first.claimed) return;
  if (first.holder && !(await runHasEnded(deps, first.holder))) {
    throw new EngineError('thread_busy', `Thread ${threadId} is busy with run ${first.holder}`);
  }
  if (first.holder) await releaseThread(q, threadId, first.holder);
  if (!(await claimThread(q, threadId, runId)).claimed) throw new EngineError('thread_busy', `Thread ${threadId} is busy`);
}

/** Whether a run has ended: its result is written, or its workflow is closed or gone. */
export async function runHasEnded(deps: { db: Db; client: Client }, runId: string): Promise<boolean> {
  if (await findRunResult(deps.db, runId)) return true;
  try {
    const description = await deps.client.workflow.getHandle(runId).describe();
    return description.status.name !== 'RUNNING';
  } catch (err) {
    return err instanceof WorkflowNotFoundError;
  }
}

