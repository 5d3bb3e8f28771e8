import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { RUN_WORKFLOW_TYPE } from '../../core/run';
import { runStartAttributes } from '../../core/search-attributes';
import type { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import { findAgent } from '../../store/agents';
import type { Agent } from '../../core/agent';
import type { Db } from '../../store/pool';
import { insertRunCallerTools } from '../../store/caller-tools';
import type { RunRecord } from '../../store/runs/runs';
import type { RunWorkflowInput } from '../../workflows/definitions';
import type { RunViewCache } from './run-view-cache';
import type { RunView } from '../../core/run-view';
import type { RunLimits } from '../../core/run-limits';
import type { RunStartMetrics } from '../../platform/metrics/api-metrics';
import type { PriceTable } from '../../core/pricing';
import { shortened } from '../../core/truncated-text';
import { callerToolsOfRun, type CallerToolsRequest } from './caller-tool-declarations';

/*
 * A recorded run's workflow, started (start-run.ts decides whether and when): its input, its
 * search attributes, its line in the Web UI, and the caller tools it declared, stored first.
 */

export interface StartRunRequest extends CallerToolsRequest {
  threadId: string;
  input: string;
  agentId?: string;
  idempotencyKey?: string;
  /** the run's own budget, within its agent's (core/run-limits.ts) */
  limits?: RunLimits;
  /** forces continue-as-new early; tests use it */
  continueAsNewAtHistoryBytes?: number;
  /** a fork's: where its workflow starts (use-cases/runs/fork-run.ts) */
  fork?: RunWorkflowInput['fork'];
  /** a replay that takes recorded results: its original, and what becomes of calls it did not make (use-cases/runs/replay-run.ts) */
  replay?: RunWorkflowInput['replay'];
}

export interface StartRunDeps {
  db: Db;
  client: Client;
  taskQueue: string;
  /** the namespace's search attributes, which every start carries: known present, a start asks nothing more */
  searchAttributes: SearchAttributeGuard;
  /** the API's run objects: a run is seeded there as recorded, so the long poll after the start reads nothing */
  views?: RunViewCache<RunView>;
  /** counts each run started, by its agent's name */
  metrics?: RunStartMetrics;
  /** the operator's price table (PRICES_FILE): a run with limits.maxCostUsd needs its model priced */
  prices?: PriceTable;
}

/**
 * What a run's start needs of its agent: its name for the Web UI, whether its preparation discovers
 * integrations, its model and limits for a budget in USD, and its caller tools (a default).
 */
export type StartedAgent = Pick<Agent, 'name' | 'integrationIds' | 'model' | 'limits' | 'callerTools'>;

const firstLine = (text: string) => shortened(text.trim().split('\n')[0] ?? '', 120);

/**
 * Starts the run's workflow; a workflow started before (an idempotent replay) is left as it is. A
 * run with caller tools has them stored first (once): its workflow is given their names only.
 */
export async function startWorkflow(deps: StartRunDeps, run: RunRecord, req: StartRunRequest, known?: StartedAgent): Promise<void> {
  const agent = known ?? await findAgent(deps.db, run.agentId);
  const callerTools = callerToolsOfRun(agent ?? {}, req);
  if (callerTools.tools.length > 0) await insertRunCallerTools(deps.db, run.id, callerTools);
  const input: RunWorkflowInput = {
    runId: run.id, continueAsNewAtHistoryBytes: req.continueAsNewAtHistoryBytes, ...(req.limits ? { limits: req.limits } : {}),
    ...(agent?.integrationIds.length ? { discovers: true } : {}),
    ...(callerTools.tools.length > 0 ? { callerTools: callerTools.tools.map((t) => t.name) } : {}),
    ...(req.fork ? { fork: req.fork } : {}),
    ...(req.replay ? { replay: req.replay } : {}),
  };
  const start = () => deps.client.workflow.start(RUN_WORKFLOW_TYPE, {
    workflowId: run.id,
    taskQueue: deps.taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: runStartAttributes(run),
    // The Web UI's run list then reads as a list of conversations.
    staticSummary: `${agent?.name ?? run.agentId}: ${firstLine(run.input)}`,
    staticDetails: `run ${run.id} on thread ${run.threadId}`,
  });
  try {
    await deps.searchAttributes.withAttributes(start);
  } catch (err) {
    // The run already ran and closed: an idempotent replay, not an error.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
