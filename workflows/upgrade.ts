import { makeContinueAsNewFunc, workflowInfo } from '@temporalio/workflow';
import type { WorkflowDefinitionOptions } from '@temporalio/common';
import type { RunContinuation, RunWorkflowInput } from './definitions';

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

/**
 * Whether the deployment's target build changed away from this execution's: at most once per
 * build, so that a continuation that asked to move and is still on the same build (the target
 * unreachable, or a server that keeps saying so) does not ask again.
 */
export function upgradeDue(input: RunWorkflowInput): boolean {
  const info = workflowInfo();
  if (!info.targetWorkerDeploymentVersionChanged) return false;
  const build = currentBuild();
  return build !== undefined && input.continued?.upgradedFrom !== build;
}

/**
 * Continues the run as new: at a turn boundary of a versioned run, onto the deployment's target
 * build (AUTO_UPGRADE); with an open turn (calls waiting on tasks), on the same build, whose code
 * wrote that turn's state.
 */
export function continueRun(input: RunWorkflowInput, continuation: RunContinuation): Promise<never> {
  const build = currentBuild();
  const upgrade = Boolean(build) && !continuation.openTurn;
  // Only a move says where it came from: a continuation for a long history must not stop the next execution from moving.
  const moving = upgrade && workflowInfo().targetWorkerDeploymentVersionChanged;
  return makeContinueAsNewFunc<(i: RunWorkflowInput) => Promise<unknown>>(upgrade ? { initialVersioningBehavior: 'AUTO_UPGRADE' } : {})({
    ...input, continued: { ...continuation, ...(moving ? { upgradedFrom: build } : {}) },
  });
}
