import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import type { WorkerVersion } from '../core/worker-version';
import { canLimitTempFiles, TEMP_FILES_UNLIMITED } from '../sources/query/temp-file-limit';
import { sourceQuerySupport } from '../sources/query/thread-role';
import { deploymentOptions, workflowCode, type WorkflowCode } from './versioning';

export interface EngineWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** a prebuilt workflow bundle (tests, production images); otherwise workflows/ is bundled at start */
  workflowBundlePath?: string;
  /** the code and version from workflowCode() (worker/versioning.ts); absent: workflowBundlePath or workflows/, unversioned */
  code?: WorkflowCode;
  identity?: string;
  /** in-flight activities get `grace` to finish on shutdown before they are cancelled; default 10 s and 30 s */
  shutdown?: { grace: `${number}s`; force: `${number}s` };
}

export async function createEngineWorker(options: EngineWorkerOptions): Promise<Worker> {
  await warnIfSourceQueryDisabled(options.deps);
  const code = options.code ?? await workflowCode({ workflowBundlePath: options.workflowBundlePath });
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.identity ? { identity: options.identity } : {}),
    ...code.workflows,
    ...deploymentOptions(code.version),
    activities: createActivities({ ...options.deps, ...(code.version ? { version: code.version } : {}) }),
    shutdownGraceTime: options.shutdown?.grace ?? '10s',
    shutdownForceTime: options.shutdown?.force ?? '30s',
  });
}

/**
 * A worker for the task queue of pinned integrations: activities only (discovery and tool calls
 * of integrations whose servers need this machine), no workflows.
 */
export async function createPinnedMcpWorker(options: Omit<EngineWorkerOptions, 'workflowBundlePath' | 'code'> & { version?: WorkerVersion }): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.identity ? { identity: options.identity } : {}),
    // The same version as the engine's worker beside it: a pinned run's activities on this queue reach this build.
    ...deploymentOptions(options.version),
    activities: createActivities({ ...options.deps, ...(options.version ? { version: options.version } : {}) }),
    shutdownGraceTime: '10s',
    shutdownForceTime: '30s',
  });
}

/** Said at start-up, not only to the LLM: an operator can grant CREATEROLE before anyone asks why queries fail. */
async function warnIfSourceQueryDisabled({ db, logger }: ActivityDeps): Promise<void> {
  try {
    const support = await sourceQuerySupport(db);
    if (!support.enabled) logger.warn(support.reason);
    else if (!(await canLimitTempFiles(db))) logger.warn(TEMP_FILES_UNLIMITED);
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'could not check whether source_query can isolate threads');
  }
}
