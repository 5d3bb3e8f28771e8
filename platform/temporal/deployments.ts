import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { WorkerVersion } from '../../core/worker-version';

const { ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS } = temporal.api.enums.v1.RoutingConfigUpdateState;

/**
 * Makes a build the current version of its Worker Deployment: new runs start on it, and runs pinned
 * to an older build move to it at their next turn boundary (workflows/upgrade.ts). What an operator
 * does with `temporal worker deployment set-current-version`; `npm start` does it for its own worker.
 * The version exists only once a worker of that build has polled: until then (up to `timeoutMs`)
 * the call is retried. It returns once the server has propagated the change to the task queues'
 * partitions: a workflow task started before that is not told its target changed, so a run woken
 * right after the call would take its next boundary on the old build and not move.
 */
export async function makeBuildCurrent(
  client: Client, version: WorkerVersion, options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const what = `build ${version.buildId} current in Worker Deployment ${version.deploymentName}`;
  const request = { namespace: client.options.namespace, deploymentName: version.deploymentName };
  await untilDone(deadline, options.signal, what, async () => {
    await client.workflowService.setWorkerDeploymentCurrentVersion({ ...request, buildId: version.buildId, identity: 'agent-engine' });
    return true;
  });
  await untilDone(deadline, options.signal, `${what} (propagated to its task queues)`, async () => {
    const { workerDeploymentInfo } = await client.workflowService.describeWorkerDeployment(request);
    return workerDeploymentInfo?.routingConfigUpdateState !== ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS;
  });
}

/** Calls `attempt` every 250 ms until it returns true; past the deadline (or aborted), its last failure or "not yet" is thrown. */
async function untilDone(deadline: number, signal: AbortSignal | undefined, what: string, attempt: () => Promise<boolean>): Promise<void> {
  for (;;) {
    let failure: unknown;
    try {
      if (await attempt()) return;
    } catch (err) {
      failure = err;
    }
    if (Date.now() > deadline || signal?.aborted) {
      const why = failure ? (failure as Error).message : 'still in progress';
      throw new Error(`could not make ${what}: ${why}`, { cause: failure });
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
