import { makeContinueAsNewFunc, workflowInfo } from '@temporalio/workflow';
import type { WorkflowDefinitionOptions } from '@temporalio/common';
import type { RunContinuation, RunWorkflowInput } from './definitions';
import { continuationAttributes } from './tenant';

/**
 * Moving a run to a new build of its Worker Deployment (worker/versioning.ts). A versioned run is
 * pinned to the build that started it; when the deployment's target build changes, the run goes on
 * there at its next turn boundary by continuing-as-new with AUTO_UPGRADE: a run waiting for an
 * approval moves once the approved turn has ended, and a turn under way finishes on the build that
 * began it. No version branches in the code: the new build starts from the continuation alone (definitions.ts).
 */

/** runWorkflow's definition options: PINNED on a versioned worker, none on an unversioned one (which refuses any). */
export const pinnedWhenVersioned = (): WorkflowDefinitionOptions => (currentBuild() ? { versioningBehavior: 'PINNED' } : {});

/** The build this execution runs on, when versioned (an unversioned worker has a build id too, in no deployment). */
function currentBuild(): string | undefined {
  const version = workflowInfo().currentDeploymentVersion;
  return version?.deploymentName ? version.buildId : undefined;
}

/** Whether the deployment's target build changed away from this execution's (see upgradeDueOn). */
export function upgradeDue(input: RunWorkflowInput): boolean {
  const info = workflowInfo();
  if (!info.targetWorkerDeploymentVersionChanged) return false;
  return upgradeDueOn({ targetChanged: true, build: currentBuild() }, input.continued?.upgradedFrom);
}

/**
 * The decision, pure: move when the server says the target build changed, on a versioned build,
 * at most once per build. A continuation that moved says which build it left (`upgradedFrom`): if
 * it is still on that build (the target unreachable, or a server that keeps saying so), it does
 * not ask again, or it would continue-as-new at every turn boundary.
 */
export function upgradeDueOn(now: { targetChanged: boolean; build?: string }, upgradedFrom?: string): boolean {
  return now.targetChanged && now.build !== undefined && upgradedFrom !== now.build;
}

/**
 * Continues the run as new: at a turn boundary of a versioned run, onto the deployment's target
 * build (AUTO_UPGRADE); with an open turn (calls waiting on tasks), on the same build, whose code
 * wrote that turn's state. It keeps its search attributes, and its tenant (set in the options, never upserted).
 */
export function continueRun(input: RunWorkflowInput, continuation: RunContinuation): Promise<never> {
  const build = currentBuild();
  const upgrade = Boolean(build) && !continuation.openTurn;
  // Only a move says where it came from: a continuation for a long history must not stop the next execution from moving.
  const moving = upgrade && workflowInfo().targetWorkerDeploymentVersionChanged;
  const versioning = upgrade ? { initialVersioningBehavior: 'AUTO_UPGRADE' as const } : {};
  const options = { typedSearchAttributes: continuationAttributes(), ...versioning };
  return makeContinueAsNewFunc<(i: RunWorkflowInput) => Promise<unknown>>(options)({
    ...input, continued: { ...continuation, ...(moving ? { upgradedFrom: build } : {}) },
  });
}
