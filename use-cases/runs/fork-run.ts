import type { ModelConfig } from '../../core/agent-model';
import { newId } from '../../platform/ids';
import { forgetUnstartedFork, insertFork } from '../../store/runs/forks';
import { findRun, withRunModel } from '../../store/runs/runs';
import { requireRole, type Caller } from '../caller';
import { agentToRunOn, checkModel } from '../model-choice';
import { admitRun } from '../tenants/run-cap';
import { runNotFound } from './runs';
import { startWorkflowOrUndo, type StartedRun, type StartRunDeps } from './start-run';
import { startingState, type StartingStateRequest } from './starting-state';

/*
 * Forking a run (POST /v1/runs/:id/fork, docs/time-travel.md): a new run on a new thread that
 * starts from the original's recorded state at the start of turn atTurn (starting-state.ts) and
 * runs live from there, on the original's agent as it is now, or another agent, or another model.
 * The original is left as it is, running or ended. The fork is an ordinary run: its own workflow,
 * budget, approvals and questions; its turns are numbered from atTurn.
 */

export interface ForkRunRequest extends StartingStateRequest {
  runId: string;
  /** the agent the fork runs on, by id or name; the original's (as it is now) by default */
  agentId?: string;
  /** the model the fork runs on, in place of its agent's */
  model?: ModelConfig;
}

export interface ForkRunDeps extends StartRunDeps {
  /** the variables model.apiKeyEnv may name */
  llmKeyEnvs: readonly string[];
}

/** validate → load the original and the agent → read where the fork starts → record the fork → start its workflow. */
export async function forkRun(deps: ForkRunDeps, caller: Caller, req: ForkRunRequest): Promise<StartedRun> {
  requireRole(caller, 'run');
  if (req.model) checkModel(deps, caller, req.model);
  const original = await findRun(deps.db, req.runId, caller.tenantId);
  if (!original) throw runNotFound(req.runId);
  const agent = await agentToRunOn(deps.db, caller, req.agentId ?? original.agentId, req.agentId !== undefined);
  const start = await startingState(deps.db, original, req);
  const runId = newId('run');
  const run = await admitRun(deps.db, caller.tenantId, (q) => insertFork(q, {
    runId, threadId: newId('thr'), originalRunId: original.id, agentId: agent.id, input: start.input,
    atTurn: start.point.turn, step: start.point.step, ...(req.model ? { model: req.model } : {}),
    startedBy: { principalId: caller.principal.id, name: caller.principal.name }, replaced: start.replaced,
  }));
  try {
    await startWorkflowOrUndo(deps, run, { threadId: run.threadId, input: run.input, fork: start.point }, withRunModel(agent, run), {
      newThread: true,
    });
  } catch (err) {
    await forgetUnstartedFork(deps.db, runId);
    throw err;
  }
  return { run, created: true };
}
