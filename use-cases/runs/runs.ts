import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Db, Queryable } from '../../store/pool';
import type { RunChangeFeed } from '../../store/runs/change-feed';
import type { RunViewCache } from './run-view-cache';
import { pendingApprovals } from '../../store/approvals';
import { pendingBudgetRequest, type BudgetRequestRecord } from '../../store/budget-requests';
import { pendingCallerToolCalls, type CallerToolCall } from '../../store/caller-tools';
import { pendingSamplingApprovals, type SamplingRecord } from '../../store/runs/samplings';
import { findStoredRun, runningChildRuns, type StoredRun } from '../../store/runs/stored-runs';
import { pendingRunInputs, type RunInput } from '../../store/runs/inputs';
import { findRun } from '../../store/runs/runs';
import type { ToolCallRecord } from '../../store/runs/tool-calls';
import type { PendingInputView, RunView } from '../../core/run-view';
import { EngineError } from '../../core/engine-error';
import { requireRole, type Caller } from '../caller';

/** The one not_found for a run id that names no run, or a run of another tenant (existence does not leak). */
export const runNotFound = (runId: string) => new EngineError('not_found', `Run ${runId} does not exist`);

/**
 * not_found unless the run is recorded (running or ended) and is the caller's tenant's; `tenantId`
 * undefined only for the /mcp server's paths, which are not scoped by tenant yet.
 */
export async function requireRunIn(db: Queryable, tenantId: string | undefined, runId: string): Promise<void> {
  if (!(await findRun(db, runId, tenantId))) throw runNotFound(runId);
}

/** not_found unless the run is recorded and the caller's tenant's (another tenant's run answers as an unknown id). */
export async function requireRun(db: Queryable, caller: Caller, runId: string): Promise<void> {
  requireRole(caller, 'read');
  await requireRunIn(db, caller.tenantId, runId);
}

/*
 * The run use cases behind the API and the MCP endpoint once a run exists: reading it from
 * PostgreSQL (waiting for its end when asked) and cancelling it. Starting one is start-run.ts's.
 */

export const pendingInputView = (i: RunInput): PendingInputView => ({
  inputId: i.inputId, toolCallId: i.toolCallId, mode: i.mode, message: i.message,
  ...(i.requestedSchema ? { requestedSchema: i.requestedSchema } : {}), ...(i.url ? { url: i.url } : {}),
  requestedAt: i.requestedAt, expiresAt: i.expiresAt,
});

/** The budget request a run waits on, as the run object shows it. */
const pendingBudgetView = (b: BudgetRequestRecord): NonNullable<RunView['pendingBudget']> => ({
  limitReached: b.limitReached, spent: b.spent, limits: b.limits, requestedAt: b.requestedAt, expiresAt: b.expiresAt,
});

/** A caller tool's call waiting for its caller's answer, as the run object shows it. */
const pendingCallerToolView = (c: CallerToolCall): RunView['pendingCallerTools'][number] => ({
  toolCallId: c.toolCallId, name: c.name, arguments: c.arguments, askedAt: c.askedAt, expiresAt: c.expiresAt,
});

/** A sampling request waiting for a reviewer, among the run's pending approvals: the request is what the model would get. */
const samplingApprovalView = (s: SamplingRecord): RunView['pendingApprovals'][number] => ({
  toolCallId: s.samplingId, kind: 'sampling', turn: s.turn, name: s.name, integrationId: s.integrationId, forToolCallId: s.toolCallId,
  arguments: s.request, requestedAt: s.requestedAt, expiresAt: s.expiresAt,
});

/**
 * The run object, from PostgreSQL alone: run_results once the run has ended; while it runs, what
 * its activities have written (completed turns and their usage, ended tool calls). Reading a run
 * never asks Temporal or a worker, so polling costs one indexed query however busy the workers are.
 * A workflow that closes without writing its result (terminated by an operator) gets one from the
 * API's reconciliation (use-cases/runs/reconcile-runs.ts).
 */
export async function readRun(db: Queryable, runId: string, tenantId?: string): Promise<RunView | undefined> {
  // One statement in the usual case; pending approvals and questions are read only when the run
  // has some (an ended run shows none, whatever its rows say). Given a tenant, another tenant's run
  // reads as none; its sub-agents' runs are read as part of it.
  const run = await findStoredRun(db, runId, tenantId);
  if (!run) return undefined;
  const [approvals, samplings, inputs, children, budget, callers] = await Promise.all([
    run.mayWait.approvals ? pendingApprovals(db, runId) : [], run.mayWait.approvals ? pendingSamplingApprovals(db, runId) : [],
    run.mayWait.inputs ? pendingRunInputs(db, runId) : [], run.mayWait.children ? childrenWaits(db, runId) : undefined,
    run.mayWait.budget ? pendingBudgetRequest(db, runId) : undefined, run.mayWait.callerTools ? pendingCallerToolCalls(db, runId) : [],
  ]);
  const args = run.toolCallArguments;
  const view = runView(run);
  const read: RunView = {
    ...view, toolCalls: view.toolCalls.map((c) => ({ ...c, ...args.get(c.id) })),
    pendingApprovals: [
      ...approvals.map(({ runId: _run, ...p }) => p), ...samplings.map(samplingApprovalView), ...(children?.pendingApprovals ?? []),
    ],
    pendingInputs: [...inputs.map(pendingInputView), ...(children?.pendingInputs ?? [])],
    pendingBudget: budget ? pendingBudgetView(budget) : null,
    pendingCallerTools: callers.map(pendingCallerToolView),
  };
  if (children) showsChildren.add(read);
  return read;
}

/**
 * Run objects that show their running sub-agents' waits: changes to those runs do not announce
 * this one's, so such an object is never cached.
 */
const showsChildren = new WeakSet<RunView>();

export type ChildrenWaits = Pick<RunView, 'pendingApprovals' | 'pendingInputs'> & { running: boolean };

/**
 * What the run's sub-agent runs wait for, each item with the run that waits (where it is decided
 * or answered): their own and, through them, their children's. The depth is bounded (MAX_SUB_AGENT_DEPTH).
 */
export async function childrenWaits(db: Queryable, runId: string): Promise<ChildrenWaits> {
  const children = await runningChildRuns(db, runId);
  const views = await Promise.all(children.map((id) => readRun(db, id)));
  const waits = views.filter((v): v is RunView => v !== undefined);
  return {
    running: children.length > 0,
    pendingApprovals: waits.flatMap((v) => v.pendingApprovals.map((p) => ({ runId: v.id, ...p }))),
    pendingInputs: waits.flatMap((v) => v.pendingInputs.map((p) => ({ runId: v.id, ...p }))),
  };
}

/** A run as readRun shows it the moment it is recorded, before its workflow has started. */
export function newRunView(
  run: Pick<StoredRun, 'id' | 'threadId' | 'agentId' | 'createdAt' | 'startedBy' | 'forkedFrom' | 'replayOf'>,
): RunView {
  const { id, threadId, agentId, createdAt, startedBy, replayOf } = run;
  const forkedFrom = run.forkedFrom && { runId: run.forkedFrom.runId, turn: run.forkedFrom.turn };
  return {
    ...runView({
      id, threadId, agentId, createdAt, startedBy, ...(forkedFrom ? { forkedFrom } : {}), ...(replayOf ? { replayOf } : {}),
      toolCallArguments: new Map(), mayWait: { approvals: false, inputs: false },
    }),
    pendingApprovals: [], pendingInputs: [], pendingBudget: null, pendingCallerTools: [],
  };
}

const noUsage = () => ({ inputTokens: 0, outputTokens: 0 });
const NOTHING_SPENT = { usd: 0, priced: true };

function runView(run: StoredRun): Omit<RunView, 'pendingApprovals' | 'pendingInputs' | 'pendingBudget' | 'pendingCallerTools'> {
  const { result, progress } = run;
  const parent = {
    parentRunId: run.parent?.runId ?? null, parentToolCallId: run.parent?.toolCallId ?? null, prefix: run.prefix ?? null,
    forkedFrom: run.forkedFrom ?? null,
    replayOf: run.replayOf ?? null, evalId: run.evalId ?? null,
    startedBy: run.startedBy,
    version: run.version ? { deployment: run.version.deploymentName, buildId: run.version.buildId } : null,
    cost: run.cost ?? NOTHING_SPENT, costWithChildren: run.costWithChildren ?? run.cost ?? NOTHING_SPENT,
  };
  if (result) {
    return {
      ...parent, id: run.id, threadId: result.threadId, agentId: result.agentId, status: result.status, stopReason: result.stopReason,
      limitReached: result.limitReached ?? null, output: result.output, error: result.error, turns: result.turns, usage: result.usage,
      usageWithChildren: result.usageWithChildren ?? result.usage,
      toolCalls: result.toolCalls.map(toView), createdAt: result.createdAt, endedAt: result.endedAt,
    };
  }
  return {
    ...parent, id: run.id, threadId: run.threadId, agentId: run.agentId, status: 'running', stopReason: null, limitReached: null,
    output: null, error: null, turns: progress?.turns ?? 0,
    usage: progress?.usage ?? noUsage(), usageWithChildren: progress?.usage ?? noUsage(),
    toolCalls: (progress?.toolCalls ?? []).map(toView), createdAt: run.createdAt, endedAt: null,
  };
}

function toView(c: Omit<ToolCallRecord, 'slot'>): RunView['toolCalls'][number] {
  return {
    id: c.id, turn: c.turn, name: c.name, type: c.type, ...(c.integrationId ? { integrationId: c.integrationId } : {}),
    status: c.status, durationMs: c.durationMs, result: c.result, resultBytes: c.resultBytes,
    ...(c.childRunId ? { childRunId: c.childRunId } : {}), ...(c.replayed ? { replayed: c.replayed } : {}),
  };
}

export interface RunControlDeps {
  db: Db;
  client: Client;
  changes: RunChangeFeed;
}

/**
 * The caller's run object (GET /v1/runs/:id), once the run has ended or `waitMs` has passed,
 * whichever comes first; through `views` when given, so that reads of an unchanged run cost no
 * query. Undefined for an unknown run and for another tenant's, from PostgreSQL and the cache alike.
 */
export async function readRunFor(
  deps: Pick<RunControlDeps, 'db' | 'changes'> & { views?: RunViewCache }, caller: Caller, runId: string, waitMs: number,
  stop?: AbortSignal,
): Promise<RunView | undefined> {
  requireRole(caller, 'read');
  const { tenantId } = caller;
  const load = () => readRun(deps.db, runId, tenantId);
  // A long poll's reads once woken are not its client reading the run again.
  const read = (woken: boolean) => (deps.views
    ? deps.views.read(runId, tenantId, load, { keep: (v) => !showsChildren.has(v), byClient: !woken }) : load());
  return untilEnded(deps, runId, read, waitMs, stop);
}

/** readRunFor for the /mcp server's paths, not scoped by tenant yet (and without the cache). */
export function readRunWhenEnded(
  deps: Pick<RunControlDeps, 'db' | 'changes'>, runId: string, waitMs: number, stop?: AbortSignal,
): Promise<RunView | undefined> {
  return untilEnded(deps, runId, () => readRun(deps.db, runId), waitMs, stop);
}

/**
 * Reads the run until it has ended or `waitMs` has passed. It waits on the process's LISTEN
 * connection, which wakes it when the run's result is written, so a waiting request costs nothing
 * between its first read and its last. `stop` ends the wait early (the server is closing) with the
 * run as it is.
 */
async function untilEnded(
  deps: Pick<RunControlDeps, 'changes'>, runId: string, read: (woken: boolean) => Promise<RunView | undefined>, waitMs: number,
  stop?: AbortSignal,
): Promise<RunView | undefined> {
  if (waitMs <= 0) return read(false);
  const deadline = Date.now() + waitMs;
  const watch = deps.changes.watch(runId, ['ended']);
  try {
    let run = await read(false);
    while (run?.status === 'running' && !stop?.aborted && Date.now() < deadline) {
      await watch.next(deadline - Date.now(), stop);
      run = await read(true);
    }
    return run;
  } finally {
    watch.close();
  }
}

/**
 * Requests cancellation and answers with the run as it is now. A run that has already
 * ended is returned as it is: cancelling it is not an error. Undefined for an unknown run and for
 * another tenant's, which is left as it is.
 */
export async function cancelRunFor(deps: RunControlDeps, caller: Caller, runId: string): Promise<RunView | undefined> {
  requireRole(caller, 'run');
  return cancelRunIn(deps, caller.tenantId, runId);
}

/** cancelRunFor for the /mcp server's paths, not scoped by tenant yet. */
export function cancelRun(deps: RunControlDeps, runId: string): Promise<RunView | undefined> {
  return cancelRunIn(deps, undefined, runId);
}

async function cancelRunIn(deps: RunControlDeps, tenantId: string | undefined, runId: string): Promise<RunView | undefined> {
  const run = await readRun(deps.db, runId, tenantId);
  if (run?.status !== 'running') return run;
  try {
    await deps.client.workflow.getHandle(runId).cancel();
  } catch (err) {
    // It closed between the read and the request; the re-read below shows how it ended.
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  return (await readRun(deps.db, runId)) ?? run;
}
