import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { DefaultLogger, bundleWorkflowCode, type WorkerOptions } from '@temporalio/worker';
import type { WorkerVersion } from '../core/worker-version';

/**
 * Worker Versioning, opt-in (WORKER_DEPLOYMENT_NAME). A versioned worker belongs to a Worker
 * Deployment with a build id: a run is pinned to the build that started it (runWorkflow says
 * PINNED) and moves to a newer build only at a turn boundary, by continuing-as-new onto it
 * (workflows/upgrade.ts). Helper workflows last seconds: they go to the current build.
 * Without a deployment name the worker is unversioned, as before.
 */

export interface WorkflowCode {
  /** what Worker.create loads: a bundle made once (its hash is the build id), or the workflows to bundle */
  workflows: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'>;
  version?: WorkerVersion;
}

/**
 * The workflow code a worker runs and, when versioned, its version. The build id is the operator's
 * (WORKER_BUILD_ID), or else the first 16 hex digits of the bundle's SHA-256: the same code, the same
 * build. Bundling here (not in Worker.create) lets the hash be taken of exactly what runs.
 */
export async function workflowCode(
  options: { deployment?: { name: string; buildId?: string }; workflowBundlePath?: string },
): Promise<WorkflowCode> {
  const { deployment, workflowBundlePath } = options;
  if (!deployment) {
    return {
      workflows: workflowBundlePath
        ? { workflowBundle: { codePath: workflowBundlePath } }
        : { workflowsPath: require.resolve('../workflows') },
    };
  }
  const code = workflowBundlePath
    ? await fs.readFile(workflowBundlePath, 'utf8')
    : (await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: new DefaultLogger('WARN') })).code;
  const buildId = deployment.buildId ?? createHash('sha256').update(code).digest('hex').slice(0, 16);
  return { workflows: { workflowBundle: { code } }, version: { deploymentName: deployment.name, buildId } };
}

/** The Worker options of a versioned worker (workflows default to AUTO_UPGRADE; runWorkflow says PINNED itself). */
export function deploymentOptions(version: WorkerVersion | undefined): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!version) return {};
  return { workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior: 'AUTO_UPGRADE' } };
}
