import { CancellationScope, condition, isCancellation, startChild, workflowInfo } from '@temporalio/workflow';
import type { ToolActivityInput } from '../activities/tool-handler';
import { addUsage, type Usage } from '../core/messages';
import { RUN_WORKFLOW_TYPE, type RunOutcome } from '../core/run';
import type { RunLimits } from '../core/run-limits';
import { runStartAttributes } from '../core/search-attributes';
import { tenantAttribute } from './tenant';
import type { ChildRun, ToolOutcome } from '../core/tool-call';
import type { RunWorkflowInput } from './definitions';
import { describeFailure } from './failures';
import { recording } from './recording';


/** What a run's sub-agent calls share: where the run sits in its tree, its children running, its budget, its children's usage. */
export interface Family {
  rootRunId: string;
  /** 0 for a run a person started */
  depth: number;
  running: number;
  /** calls waiting for a child's place, in call order: a child that ends hands its place to the first */
  waiting: { granted: boolean }[];
  /** children at once (limits.maxChildrenAtOnce, else MAX_CHILDREN_AT_ONCE) */
  maxAtOnce: () => number;
  /** the root's bound on its tree (its limits.maxDescendants, else MAX_DESCENDANTS), carried down */
  maxDescendants: () => number;
  /** what is left of the run's budget, for a child to start with */
  limitsLeft: () => RunLimits | undefined;
  /** a child's usage and priced cost (its own children's included) */
  addUsage: (usage: Usage, costUsd: number) => void;
}

/**
 * A place among the run's children running at once. Taken and handed over in one step: calls
 * that a condition let through together could all see a free place before any took it.
 */
async function takePlace(family: Family): Promise<void> {
  if (family.running < family.maxAtOnce()) {
    family.running++;
    return;
  }
  const ticket = { granted: false };
  family.waiting.push(ticket);
  try {
    await condition(() => ticket.granted);
  } catch (err) {
    // Cancelled while waiting: out of the queue, and a place handed over meanwhile goes on.
    family.waiting = family.waiting.filter((t) => t !== ticket);
    if (ticket.granted) leavePlace(family);
    throw err;
  }
}

function leavePlace(family: Family): void {
  const next = family.waiting.shift();
  if (next) next.granted = true;
  else family.running--;
}

/**
 * A sub-agent's run as a child workflow of the run that called it (its run recorded by the call's
 * activity, activities/tools/sub-agent.ts): at most maxAtOnce at once per run, with what
 * is left of the parent's budget, one level deeper, in the parent's tenant. Cancelling the parent cancels its children
 * (Temporal cancels the child workflows of a cancelled scope); a child cancelled on its own, or
 * failed, is an error text for the parent's LLM. Its answer is recorded as the call's result.
 */
export async function runChild(input: ToolActivityInput, child: ChildRun, family: Family): Promise<ToolOutcome> {
  await takePlace(family);
  let failure: string | undefined;
  try {
    const limits = family.limitsLeft();
    const args: RunWorkflowInput = {
      runId: child.runId, ...(limits ? { limits } : {}), ...(input.subAgent?.hasIntegrations ? { discovers: true } : {}),
      parent: { runId: input.runId, rootRunId: family.rootRunId, depth: family.depth + 1, maxDescendants: family.maxDescendants() },
    };
    const handle = await startChild(RUN_WORKFLOW_TYPE, {
      workflowId: child.runId, args: [args], taskQueue: workflowInfo().taskQueue,
      typedSearchAttributes: runStartAttributes({
        threadId: child.threadId, agentId: child.agentId, tenantId: String(tenantAttribute().value),
      }),
      staticSummary: `sub-agent ${input.subAgent?.agentName ?? input.name} of run ${input.runId}`,
    });
    const outcome = await handle.result() as RunOutcome;
    family.addUsage(addUsage(outcome.usage, outcome.childUsage), (outcome.costUsd ?? 0) + (outcome.childCostUsd ?? 0));
  } catch (err) {
    if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
    failure = describeFailure(err).message;
  } finally {
    leavePlace(family);
  }
  return recording.recordSubAgentResult({ ...input, childRunId: child.runId, ...(failure ? { failure } : {}) });
}
