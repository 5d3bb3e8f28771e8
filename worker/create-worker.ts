import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';

export interface EngineWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** a prebuilt workflow bundle (tests, production images); otherwise workflows/ is bundled at start */
  workflowBundlePath?: string;
  identity?: string;
}

export async function createEngineWorker(options: EngineWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.identity ? { identity: options.identity } : {}),
    ...(options.workflowBundlePath
      ? { workflowBundle: { codePath: options.workflowBundlePath } }
      : { workflowsPath: require.resolve('../workflows') }),
    activities: createActivities(options.deps),
    // In-flight activities get this long to finish on shutdown before they are cancelled.
    shutdownGraceTime: '10s',
    shutdownForceTime: '30s',
  });
}
