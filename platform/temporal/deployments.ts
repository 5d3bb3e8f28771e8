import type { Client } from '@temporalio/client';
import type { WorkerVersion } from '../../core/worker-version';

/**
 * Makes a build the current version of its Worker Deployment: new runs start on it, and runs pinned
 * to an older build move to it at their next turn boundary (workflows/upgrade.ts). What an operator
 * does with `temporal worker deployment set-current-version`; `npm start` does it for its own worker.
 * The version exists only once a worker of that build has polled: until then (up to `timeoutMs`)
 * the call is retried.
 */
export async function makeBuildCurrent(
  client: Client, version: WorkerVersion, options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    try {
      await client.workflowService.setWorkerDeploymentCurrentVersion({
        namespace: client.options.namespace, deploymentName: version.deploymentName, buildId: version.buildId, identity: 'agent-engine',
      });
      return;
    } catch (err) {
      if (Date.now() > deadline || options.signal?.aborted) {
        const what = `build ${version.buildId} current in Worker Deployment ${version.deploymentName}`;
        throw new Error(`could not make ${what}: ${(err as Error).message}`, { cause: err });
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
