import type { ModelConfig } from '../../core/agent-model';
import { EngineError } from '../../core/engine-error';
import { replayWorkflowInput, type ReplayTools } from '../../core/replay';
import { newId } from '../../platform/ids';
import { insertReplay, recordedPreparation } from '../../store/runs/replays';
import { findRun, withRunModel, type RunRecord } from '../../store/runs/runs';
import { requireRole, type Caller } from '../caller';
import { agentToRunOn, checkModel } from '../model-choice';
import { admitRun } from '../tenants/run-cap';
import { runNotFound } from './runs';
import { startWorkflowOrUndo, type StartedRun, type StartRunDeps } from './start-run';

/*
 * Replaying a run (POST /v1/runs/:id/replay, docs/time-travel.md): its input again, as a new run
 * on a thread of its own that starts with the original thread's messages from before it. The
 * replay runs on the original's agent as it is now, or on another agent, whose instructions and
 * model it takes; its tools are the original's. With "recorded", a call gets the result the
 * original got for the same call, and nothing outside the engine is asked; with
 * "recorded-then-live" a call the original did not make goes live; with "live" every call does.
 * The replay is an ordinary run otherwise: its own workflow, approvals and questions for what runs
 * live. Evaluations start their replays here.
 */

export interface ReplayRunRequest {
  /** the run to replay */
  runId: string;
  tools: ReplayTools;
  /** the agent the replay runs on, by id or name; the original's (as it is now) by default */
  agentId?: string;
  /** the model the replay runs on, in place of its agent's */
  model?: ModelConfig;
}

export interface ReplayRunDeps extends StartRunDeps {
  /** the variables model.apiKeyEnv may name */
  llmKeyEnvs: readonly string[];
}

/** validate → load the original and the agent → record the replay on a thread of its own → start its workflow. */
export async function replayRun(deps: ReplayRunDeps, caller: Caller, req: ReplayRunRequest): Promise<StartedRun> {
  requireRole(caller, 'run');
  if (req.model) checkModel(deps, caller, req.model);
  const original = await findRun(deps.db, req.runId, caller.tenantId);
  if (!original) throw runNotFound(req.runId);
  const integrationIds = await recordedIntegrations(deps, original);
  const agent = await agentToRunOn(deps.db, caller, req.agentId ?? original.agentId, req.agentId !== undefined);
  const run = await admitRun(deps.db, caller.tenantId, (q) => insertReplay(q, {
    runId: newId('run'), threadId: newId('thr'), originalRunId: original.id, agentId: agent.id, tools: req.tools,
    ...(req.model ? { model: req.model } : {}), startedBy: { principalId: caller.principal.id, name: caller.principal.name },
  }));
  if (!run) throw runNotFound(req.runId);
  // Its caller tools are the original's, copied with the replay (never its agent's defaults).
  const replayed = replayWorkflowInput({ runId: original.id, tools: req.tools });
  const start = { threadId: run.threadId, input: run.input, callerTools: [], ...replayed };
  // Only a live replay discovers the original's integrations: its preparation is tool work then.
  const uses = { ...withRunModel(agent, run), integrationIds: req.tools === 'live' ? integrationIds : [] };
  await startWorkflowOrUndo(deps, run, start, uses, { newThread: true });
  return { run, created: true };
}

/** The original's integrations as its preparation recorded them; a conflict when it was never prepared. */
async function recordedIntegrations(deps: ReplayRunDeps, original: RunRecord): Promise<string[]> {
  const recorded = await recordedPreparation(deps.db, original.id);
  if (recorded) return recorded.integrationIds;
  throw new EngineError('conflict', `Run ${original.id} has no recorded preparation to replay: it ended, or is still starting, `
    + 'before its first turn');
}
