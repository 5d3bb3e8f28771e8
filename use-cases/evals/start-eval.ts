import type { Client } from '@temporalio/client';
import { EVAL_WORKFLOW_TYPE, MAX_EVAL_RUNS, type Expectation } from '../../core/eval';
import type { CreateEvalRequest } from '../../core/eval-view';
import { EngineError } from '../../core/engine-error';
import { tenantIdKey } from '../../core/search-attributes';
import { agentDisabledText } from '../../store/agents';
import { deleteEval, insertEval, type NewEval } from '../../store/evals/evals';
import { findReplayableRuns, threadRunsOf, type ReplayableRun } from '../../store/evals/eval-runs';
import type { Db } from '../../store/pool';
import { isTenantThread } from '../../store/threads/threads';
import { recordedPreparation } from '../../store/runs/replays';
import type { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import { newId } from '../../platform/ids';
import { shortened } from '../../core/truncated-text';
import { loadAgent } from '../agents/agents';
import { requireRole, type Caller } from '../caller';
import { checkModel } from '../model-choice';

/*
 * Starting an eval (POST /v1/evals): check what it names (the caller's runs or threads, ended;
 * its agent), record it with its runs in their order, start its workflow. The workflow replays
 * and scores them (workflows/eval-workflow.ts); what it finds is read back by evals.ts.
 */

export interface StartEvalDeps {
  db: Db;
  client: Client;
  taskQueue: string;
  searchAttributes: SearchAttributeGuard;
  /** the variables model.apiKeyEnv may name */
  llmKeyEnvs: readonly string[];
}

/** The runs an eval replays, in order, each with its group: a thread's runs share one. */
type PlannedRun = { run: ReplayableRun; group: number; field: string };

export async function startEval(deps: StartEvalDeps, caller: Caller, req: CreateEvalRequest): Promise<{ id: string; status: 'running' }> {
  requireRole(caller, 'run');
  if (req.model) checkModel(deps, caller, req.model);
  const agent = req.agentId === undefined ? undefined : await loadAgent(deps.db, caller.tenantId, req.agentId);
  if (agent?.disabledAt) throw new EngineError('agent_disabled', agentDisabledText(agent));
  const planned = req.runIds
    ? await plannedRuns(deps.db, caller.tenantId, req.runIds) : await plannedThreads(deps.db, caller.tenantId, req.threadIds ?? []);
  await requireRecorded(deps.db, planned);
  const known = new Set(planned.map((p) => p.run.id));
  const stray = Object.keys(req.expectByRun ?? {}).find((runId) => !known.has(runId));
  if (stray) {
    throw new EngineError('validation', `body.expectByRun.${stray}: not one of the eval's runs`, { field: `body.expectByRun.${stray}` });
  }
  const record: NewEval = {
    id: newId('evl'), tenantId: caller.tenantId, name: req.name, tools: req.tools, agentId: agent?.id ?? null, model: req.model ?? null,
    startedBy: { principalId: caller.principal.id, name: caller.principal.name },
    runs: planned.map(({ run, group }) => ({ originalRunId: run.id, group, expect: expectationOf(req, run.id) })),
  };
  await insertEval(deps.db, record);
  try {
    await startEvalWorkflow(deps, record);
  } catch (err) {
    await deleteEval(deps.db, record.id);
    throw err;
  }
  return { id: record.id, status: 'running' };
}

const expectationOf = (req: CreateEvalRequest, runId: string): Expectation => req.expectByRun?.[runId] ?? req.expect ?? {};

/** Each run on a new thread of its own: a group each. */
async function plannedRuns(db: Db, tenantId: string, runIds: string[]): Promise<PlannedRun[]> {
  const found = await findReplayableRuns(db, tenantId, runIds);
  return runIds.map((id, i) => {
    const run = found.get(id);
    if (!run) throw new EngineError('not_found', `Run ${id} does not exist`);
    requireEnded(run, `body.runIds[${i}]`);
    return { run, group: i, field: `body.runIds[${i}]` };
  });
}

/** Each thread's runs in their order, on one new thread: a group per thread. */
async function plannedThreads(db: Db, tenantId: string, threadIds: string[]): Promise<PlannedRun[]> {
  const byThread = await threadRunsOf(db, tenantId, threadIds);
  const planned: PlannedRun[] = [];
  for (const [i, threadId] of threadIds.entries()) {
    const runs = byThread.get(threadId);
    if (!runs) {
      if (!(await isTenantThread(db, tenantId, threadId))) throw new EngineError('not_found', `Thread ${threadId} does not exist`);
      throw new EngineError('validation', `body.threadIds[${i}]: thread ${threadId} has no runs`, { field: `body.threadIds[${i}]` });
    }
    for (const run of runs) {
      requireEnded(run, `body.threadIds[${i}]`);
      planned.push({ run, group: i, field: `body.threadIds[${i}]` });
    }
  }
  if (planned.length > MAX_EVAL_RUNS) {
    throw new EngineError('validation', `body.threadIds: the threads have ${planned.length} runs; an eval replays at most ${MAX_EVAL_RUNS}`,
      { field: 'body.threadIds' });
  }
  return planned;
}

function requireEnded(run: ReplayableRun, field: string): void {
  if (!run.ended) throw new EngineError('conflict', `${field}: run ${run.id} is still running; an eval replays ended runs`, { field });
}

/** A replay starts from its original's recorded preparation: a run that ended before its first turn has none. */
async function requireRecorded(db: Db, planned: PlannedRun[]): Promise<void> {
  const recorded = await Promise.all(planned.map((p) => recordedPreparation(db, p.run.id)));
  const missing = planned.find((_, i) => !recorded[i]);
  if (missing) {
    throw new EngineError('conflict', `${missing.field}: run ${missing.run.id} has no recorded preparation to replay: it ended before its `
      + 'first turn', { field: missing.field });
  }
}

/** The eval's workflow, by the eval's id, in the eval's tenant; the Web UI lists it with its name. */
async function startEvalWorkflow(deps: StartEvalDeps, record: NewEval): Promise<void> {
  await deps.searchAttributes.withAttributes(() => deps.client.workflow.start(EVAL_WORKFLOW_TYPE, {
    workflowId: record.id,
    taskQueue: deps.taskQueue,
    args: [{ evalId: record.id }],
    workflowIdConflictPolicy: 'FAIL',
    typedSearchAttributes: [{ key: tenantIdKey, value: record.tenantId }],
    staticSummary: `eval ${shortened(record.name, 100)}: ${record.runs.length} run(s) replayed, tools ${record.tools}`,
    staticDetails: `eval ${record.id}`,
  }));
}
